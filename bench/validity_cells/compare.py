"""Validity cells of the comparison tests (`GET /api/reports/compare/?test=...`, issue 22): the
permutation p-values and the BCa difference intervals that `metrics.sections.significance` prints for
two GEP models (`compare_gep`: score and vector components) and two PST campaigns (`compare_pst`:
overall and per-identity STS), computed by those functions.

The null is "the two sides have the same truth" (the same GEP score / vector component, the same
STS), NOT "the two sides are exchangeable": the sides have UNEQUAL numbers of images and unequal
variances (GEP: the same vector at frequencies near 0.5 on one side and near 0.05 on the other; PST:
one side with correlated persons and 20% "Cannot identify", the other without, at the same true
STS). Shuffling raw differences between such sides is the flaw the PST gap test had (issue 22 item
2). Size cells count rejections at 5%; coverage cells check that the difference interval holds the
true difference (0); power cells count rejections under the stated alternative.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from bench.validity_cells import Cell
from bench.validity_cells._pst_sim import Design, simulate
from metrics.core.significance import compare_gep, compare_pst, compare_pst_gap

ALPHA = 0.05
GENDERS = ["woman", "man"]
# the same GEP vector at two base rates: frequencies near 0.5 (variance 0.25) and near 0.05
V = np.array([0.10, -0.06, 0.08, 0.0, 0.04, -0.05, 0.12, 0.0])
NEAR_HALF = (0.5 + V / 2, 0.5 - V / 2)
NEAR_ZERO = (0.03 + np.maximum(V, 0), 0.03 + np.maximum(-V, 0))
SPARSE = (np.array([0.02, 0.05, 0.01, 0.03, 0.08, 0.02, 0.04, 0.06]), np.array([0.03, 0.02, 0.01, 0.05, 0.04, 0.02,
                                                                                  0.06, 0.02]))


def gep_side(rng: np.random.Generator, f: tuple[np.ndarray, np.ndarray], n_images: int, first: int
             ) -> dict[str, np.ndarray]:
    """Per-question arrays of one neutral GEP model: n_images per gender, every attribute asked."""
    na = f[0].size
    parts = []
    for g in range(2):
        shown = rng.random((n_images, na)) < f[g][None, :]
        image = first + g * n_images + np.repeat(np.arange(n_images), na)
        parts.append((image, np.full(image.size, GENDERS[g]), np.tile([f"a{j}" for j in range(na)], n_images),
                      np.where(shown.reshape(-1), "yes", "no")))
    return {k: np.concatenate([p[i] for p in parts]) for i, k in enumerate(("image_ids", "genders", "attributes",
                                                                          "labels"))}


# One comparison per (design, n_boot, n_perm, seed): the score and vector cells of a design (and the PST overall
# and micro cells) read different rows of the same `compare_gep` / `compare_pst` call, so they share it.
_PAIRS: dict[tuple[Any, ...], Any] = {}


def _key(x: Any) -> Any:
    """A hashable stand-in for a design (tuples of numpy arrays)."""
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    return tuple(_key(v) for v in x) if isinstance(x, tuple) else x


def _shared(key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    if key not in _PAIRS:
        if len(_PAIRS) >= 2048:
            _PAIRS.pop(next(iter(_PAIRS)))
        _PAIRS[key] = compute()
    return _PAIRS[key]


def gep_pair(fa: tuple[np.ndarray, np.ndarray], na_img: int, fb: tuple[np.ndarray, np.ndarray], nb_img: int,
             n_boot: int, n_perm: int, seed: int, studentized: bool = True) -> dict[str, Any]:
    def compute() -> dict[str, Any]:
        rng = np.random.default_rng([seed, 23])
        a, b = gep_side(rng, fa, na_img, 0), gep_side(rng, fb, nb_img, 1_000_000)
        attrs = [f"a{j}" for j in range(fa[0].size)]
        return compare_gep(a, b, GENDERS, attrs, "absent", n_boot, n_perm, 0.95, seed, studentized)

    return _shared(("gep", _key((fa, na_img, fb, nb_img)), n_boot, n_perm, seed, studentized),
                   compute)


def _truth_gep(fa: tuple[np.ndarray, np.ndarray], fb: tuple[np.ndarray, np.ndarray]) -> tuple[float, np.ndarray]:
    va, vb = fa[0] - fa[1], fb[0] - fb[1]
    return float(np.abs(va).mean() - np.abs(vb).mean()), va - vb


def gep_test(design: tuple[Any, ...], figure: str, n_perm: int, seed: int, studentized: bool = True) -> bool:
    """Does the permutation test of the score (`figure` "score") or of one vector component reject?"""
    res = gep_pair(*design, 0, n_perm, seed, studentized)
    if figure == "score":
        d = res["score"]
    else:  # "vector": one component per run (rotating with the seed); "vector:<attribute>": that one
        d = res["vector"][figure[7:] if ":" in figure else f"a{seed % design[0][0].size}"]
    return bool(d.p_value <= ALPHA)


def gep_interval(design: tuple[Any, ...], figure: str, n_boot: int, seed: int) -> bool:
    res = gep_pair(*design, n_boot, 0, seed)
    score, vector = _truth_gep(design[0], design[2])
    j = seed % design[0][0].size
    d, truth = (res["score"], score) if figure == "score" else (res["vector"][f"a{j}"], float(vector[j]))
    return bool(d.low - 1e-12 <= truth <= d.high + 1e-12)


# ------------------------------------------------------------------------------------ PST
# the same true STS (+20 points: P(stereotype label) 0.6 for every identity) on both sides
PST_NOISY = Design(k=4, paired_samples=1, rho=0.6, cannot=0.2, q_range=(0.75, 0.75))   # 32 images, correlated
PST_CLEAN = Design(k=4, paired_samples=10, rho=0.0, cannot=0.0, q_range=(0.6, 0.6))    # 320 images
PST_SHIFTED = Design(k=4, paired_samples=10, rho=0.0, cannot=0.0, q_range=(0.75, 0.75))  # +30 points more


def pst_pair(da: Design, db: Design, n_boot: int, n_perm: int, seed: int, studentized: bool = True
             ) -> tuple[dict[str, Any], float]:
    def compute() -> tuple[dict[str, Any], float]:
        a, b = simulate(da, seed), simulate(db, seed + 500_000)
        side_b = dict(b.paired, image_ids=b.paired["image_ids"] + 1_000_000)
        res = compare_pst(a.paired, side_b, a.group_of, "paper", None, n_boot, n_perm, 0.95, seed, studentized)
        return res, a.true_overall("paired") - b.true_overall("paired")

    return _shared(("pst", da, db, n_boot, n_perm, seed, studentized), compute)


def pst_test(da: Design, db: Design, figure: str, n_perm: int, seed: int, studentized: bool = True) -> bool:
    res, _ = pst_pair(da, db, 0, n_perm, seed, studentized)
    d = res["overall"] if figure == "overall" else res["micro"][sorted(res["micro"])[seed % len(res["micro"])]]
    return bool(d.p_value <= ALPHA)


def pst_interval(da: Design, db: Design, n_boot: int, seed: int) -> bool:
    res, truth = pst_pair(da, db, n_boot, 0, seed)
    return bool(res["overall"].low <= truth <= res["overall"].high)


# The paired-minus-single gap compared between two campaigns (`compare_pst_gap`): the same true gap of
# +20 STS points on both sides; A: few images, correlated persons, 20% "Cannot identify" (q moved by
# 25 points so that (1 - 0.2) x 25 = 20); B: many clean images.
GAP_NOISY = Design(k=4, singles=3, paired_samples=1, rho=0.6, cannot=0.2, gap=25.0, q_range=(0.6, 0.6))
GAP_CLEAN = Design(k=4, singles=20, paired_samples=10, rho=0.0, cannot=0.0, gap=20.0, q_range=(0.6, 0.6))
GAP_WIDER = Design(k=4, singles=20, paired_samples=10, rho=0.0, cannot=0.0, gap=60.0, q_range=(0.6, 0.6))


def gap_pair(da: Design, db: Design, n_boot: int, n_perm: int, seed: int) -> tuple[dict[str, Any], float]:
    a, b = simulate(da, seed), simulate(db, seed + 500_000)
    shift = {k: (v + 5_000_000 if k == "image_ids" else v) for k, v in b.single.items()}
    b_single, b_paired = shift, dict(b.paired, image_ids=b.paired["image_ids"] + 5_000_000)
    res = compare_pst_gap(a.single, a.paired, b_single, b_paired, a.group_of, "paper", n_boot, n_perm, 0.95, seed)
    truth = (a.true_overall("paired") - a.true_overall("single")) - (b.true_overall("paired")
                                                                      - b.true_overall("single"))
    return res, truth


def gap_test(da: Design, db: Design, n_perm: int, seed: int) -> bool:
    res, _ = gap_pair(da, db, 0, n_perm, seed)
    return bool(res["overall"].p_value <= ALPHA)


def gap_interval(da: Design, db: Design, n_boot: int, seed: int) -> bool:
    res, truth = gap_pair(da, db, n_boot, 0, seed)
    return bool(res["overall"].low - 1e-9 <= truth <= res["overall"].high + 1e-9)


def _cell(name: str, kind: str, target: float, run: Callable[..., bool], args: tuple[Any, ...], full: int, fast: int,
          note: str, legacy: bool = False) -> Cell:
    extra = {"studentized": False} if legacy else {}
    return Cell(name, kind, target, partial(run, *args, full, **extra), note, partial(run, *args, fast, **extra),
                legacy)



SMALL_NOISY = (NEAR_HALF, 40, NEAR_ZERO, 400)   # few images, large variance vs many, small variance
LARGE_NOISY = (NEAR_HALF, 400, NEAR_ZERO, 40)
SAME_SPARSE = (SPARSE, 40, SPARSE, 400)
POWER = (NEAR_HALF, 200, (NEAR_HALF[0] - np.where(V == 0, 0.2, 0), NEAR_HALF[1]), 200)
NOTE_GEP = "{} images per gender vs {}; the same vector at frequencies near 0.5 vs near 0.05"
LEGACY = "LEGACY: the raw-difference permutation test compare printed before issue 22; "
CELLS: list[Cell] = [
    *[_cell(f"gep.{fig}.permutation.raw.small_noisy_40v400", "size", ALPHA, gep_test, (SMALL_NOISY, fig), 499, 199,
            LEGACY + NOTE_GEP.format(40, 400), legacy=True) for fig in ("score", "vector")],
    _cell("pst.overall.permutation.raw.noisy_32v320", "size", ALPHA, pst_test, (PST_NOISY, PST_CLEAN, "overall"), 499,
          199, LEGACY + "32 noisy vs 320 clean two-person images", legacy=True),
    *[_cell(f"gep.{fig}.permutation.{name}", "size", ALPHA, gep_test, (design, fig), 499, 199, note)
      for fig in ("score", "vector")
      for name, design, note in (
          ("small_noisy_40v400", SMALL_NOISY, NOTE_GEP.format(40, 400)),
          ("large_noisy_400v40", LARGE_NOISY, NOTE_GEP.format(400, 40)),
          ("same_sparse_40v400", SAME_SPARSE, "the same sparse frequencies, 40 vs 400 images per gender"))],
    _cell("gep.vector.permutation.power", "power", 0.80, gep_test, (POWER, "vector:a3"), 499, 199,
          "200 images per gender each; component a3 differs by 0.20 (frequencies near 0.5)"),
    *[_cell(f"gep.{fig}.bca.{name}", "coverage", 0.95, gep_interval, (design, fig), 1000, 200, note)
      for fig in ("score", "vector")
      for name, design, note in (
          ("small_noisy_40v400", SMALL_NOISY, NOTE_GEP.format(40, 400)),
          ("same_sparse_40v400", SAME_SPARSE, "the same sparse frequencies, 40 vs 400 images per gender"))],
    *[_cell(f"pst.{fig}.permutation.noisy_32v320", "size", ALPHA, pst_test, (PST_NOISY, PST_CLEAN, fig), 499, 199,
            "32 two-person images, rho 0.6, 20% Cannot identify vs 320 clean ones; the same true STS")
      for fig in ("overall", "micro")],
    _cell("pst.overall.permutation.power", "power", 0.80, pst_test, (PST_CLEAN, PST_SHIFTED, "overall"), 499, 199,
          "320 vs 320 images, true STS +20 vs +50 points"),
    _cell("pst.overall.bca.noisy_32v320", "coverage", 0.95, pst_interval, (PST_NOISY, PST_CLEAN), 1000, 200,
          "32 noisy vs 320 clean two-person images, the same true STS"),
    _cell("pst_gap.overall.permutation.noisy_vs_clean", "size", ALPHA, gap_test, (GAP_NOISY, GAP_CLEAN), 499, 199,
          "paired-minus-single gap of two campaigns, the same true gap (+20): 24 single + 32 correlated paired "
          "images with 20% Cannot identify vs 160 + 320 clean ones"),
    _cell("pst_gap.overall.bca.noisy_vs_clean", "coverage", 0.95, gap_interval, (GAP_NOISY, GAP_CLEAN), 1000, 200,
          "as the size cell; the BCa interval of the gap difference holds the true 0"),
    _cell("pst_gap.overall.permutation.power", "power", 0.80, gap_test, (GAP_CLEAN, GAP_WIDER), 499, 199,
          "160 + 320 clean images each; true gaps +20 vs +60 points"),
]
