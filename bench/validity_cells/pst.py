"""PST cells of the validity harness (issue 22, defects 1 and 2; bench/validity.py).

Simulated campaigns: bench/validity_cells/_pst_sim.py (identities in two groups, every masculine x
feminine pair in both orders, correlated persons within a paired image, single images per identity).
Each cell computes the figure with the function the report calls.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import numpy as np

from bench.validity_cells import Cell
from bench.validity_cells._pst_sim import Campaign, Design, intervention_images, simulate
from metrics.core import metric_intervals as mi
from metrics.core.significance import compare_pst
from metrics.core.uncertainty import permutation_test_sts, permutation_test_sts_studentized
from metrics.sections.pst_analysis import intervention_section

ALPHA = 0.05


def _identity(c: Campaign, seed: int) -> str:
    return c.identities[seed % len(c.identities)]


def _truth_gap(c: Campaign, identity: str) -> float:
    return c.true_micro("paired", identity) - c.true_micro("single", identity)


# ------------------------------------------------------------------ defect 1: per-identity gap
def micro_gap_newcombe(design: Design, seed: int) -> bool:
    c = simulate(design, seed)
    ident = _identity(c, seed)
    ci = mi.micro_gap_intervals(c.paired, c.single, "paper")[ident]
    return bool(ci.low <= _truth_gap(c, ident) <= ci.high)


def micro_gap_bca(design: Design, n_boot: int, seed: int) -> bool:
    """The interval the report printed before issue 22 (BCa over images), for the record."""
    c = simulate(design, seed)
    ident = _identity(c, seed)
    d = compare_pst(c.paired, c.single, c.group_of, "paper", None, n_boot, 0, 0.95, seed)["micro"][ident]
    return bool(d.low <= _truth_gap(c, ident) <= d.high)


def overall_gap_bca(design: Design, n_boot: int, seed: int) -> bool:
    c = simulate(design, seed)
    d = compare_pst(c.paired, c.single, c.group_of, "paper", None, n_boot, 0, 0.95, seed)["overall"]
    truth = c.true_overall("paired") - c.true_overall("single")
    return bool(d.low <= truth <= d.high)


# ------------------------------------------------------------------ defect 2: paired-vs-single test
def _both(c: Campaign) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    p, s = c.paired, c.single
    images = np.concatenate([p["image_ids"], s["image_ids"]])
    is_paired = np.concatenate([np.ones(p["image_ids"].size, int), np.zeros(s["image_ids"].size, int)])
    labels = np.concatenate([p["labels"], s["labels"]])
    stereotypes = np.concatenate([p["stereotypes"], s["stereotypes"]])
    return images, is_paired, labels, stereotypes


def gap_test(design: Design, n_perm: int, studentized: bool, seed: int) -> bool:
    c = simulate(design, seed)
    test = permutation_test_sts_studentized if studentized else permutation_test_sts
    images, is_paired, labels, stereotypes = _both(c)
    return bool(test(images, is_paired, labels, stereotypes, "paper", n_perm=n_perm, seed=seed).p_value <= ALPHA)


# ------------------------------------------------------------------ defect 8: intervention top-5
@lru_cache(maxsize=2048)  # the variants of one simulated campaign share one computation
def _intervention(design: Design, n_boot: int, n_perm: int, seed: int) -> dict[str, Any]:
    c = simulate(design, seed)
    return intervention_section(plain=c.paired, intervention=intervention_images(c, design, seed), groups=c.group_of,
                                treatment="paper", n_boot=n_boot, n_perm=n_perm, confidence=0.95, seed=seed)


def intervention_test(design: Design, n_boot: int, n_perm: int, variant: str, seed: int) -> bool:
    """No effect of the intervention: does the variant's test reject?"""
    d = _intervention(design, n_boot, n_perm, seed)[variant]["difference"]
    return bool(d is not None and d["p_value"] <= ALPHA)


def intervention_all_p(design: Design, n_perm: int, seed: int) -> float:
    """The `all` variant's permutation p-value alone: the report's `compare_pst` call (as
    `intervention_analysis` makes it) without the bootstrap. Its permutations are seeded `seed + 1`
    whatever `n_boot` is, so this is the report's p-value, at a cost that allows thousands of runs."""
    c = simulate(design, seed)
    return compare_pst(intervention_images(c, design, seed), c.paired, c.group_of, "paper", None, 0, n_perm, 0.95,
                       seed)["overall"].p_value


def intervention_all_test(design: Design, n_perm: int, seed: int) -> bool:
    return bool(intervention_all_p(design, n_perm, seed) <= ALPHA)


# ------------------------------------------------------------------ defect 7: amplification from few images
def _amplification_campaign(images: int, effect: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """30 identities with reference %F in 10-90, `images` single images each, generated %F = reference
    moved `effect` points toward its skew (0: no amplification). Returns (feminine, counted, reference)."""
    rng = np.random.default_rng([seed, 7])
    ref = rng.uniform(10, 90, size=30)
    ref = np.where(np.abs(ref - 50) < 1, 45.0, ref)
    gen = np.clip(np.where(ref < 50, ref - effect, ref + effect), 1, 99)
    fem = rng.binomial(images, gen / 100.0).astype(float)[None]
    return fem, np.full((1, 30), float(images)), ref


def amplification_calibrated(images: int, effect: float, n_draws: int, seed: int) -> bool:
    from metrics.core.amplification import amplification_null_test

    fem, n, ref = _amplification_campaign(images, effect, seed)
    p = amplification_null_test(fem, n, ref, n_draws, seed)["with_exclusion"]["p_value"]
    return bool(p is not None and p <= ALPHA)


def amplification_ttest(images: int, seed: int) -> bool:
    """The paper's t-test over the kept identities (what the report printed before issue 22)."""
    from metrics.core.amplification import amplification

    fem, n, ref = _amplification_campaign(images, 0.0, seed)
    gen = {"1": {f"o{i}": float(100 * fem[0, i] / n[0, i]) for i in range(ref.size)}}
    p = amplification(gen, {f"o{i}": float(r) for i, r in enumerate(ref)})["ttest"]["p_value"]
    return bool(p is not None and p <= ALPHA)


def _cell(name: str, kind: str, target: float, run: Callable[..., bool], *args: object, fast: tuple[object, ...] = (),
          note: str = "", legacy: bool = False) -> Cell:
    return Cell(name, kind, target, partial(run, *args), note,  # type: ignore[arg-type]
                partial(run, *fast) if fast else None, legacy)


OCC = Design(k=20, singles=3)               # the occupation preset: 40 identities, 3 single images each
TEN = Design(k=10, singles=10)              # 10 single images per identity: the validated floor
INTERVENTION = Design(k=10, singles=0, rho=0.3)  # 200 plain paired images, 200 intervention images, no effect
SMALL_INTERVENTION = Design(k=6, singles=0, rho=0.3)
CELLS: list[Cell] = [
    _cell("gap.micro_ci.bca.3_singles", "coverage", 0.95, micro_gap_bca, OCC, 1000, fast=(OCC, 200),
          note="the pre-issue-22 interval (BCa over 3 single images); now left out with a warning", legacy=True),
    _cell("gap.micro_ci.newcombe.10_singles", "coverage", 0.95, micro_gap_newcombe, TEN,
          note="Newcombe with design effect, 10 single / 20 paired persons per identity"),
    _cell("gap.micro_ci.newcombe.10_singles.rho+0.6.cannot", "coverage", 0.95, micro_gap_newcombe,
          Design(k=10, singles=10, rho=0.6, cannot=0.1), note="correlated persons, 10% Cannot identify"),
    _cell("gap.micro_ci.newcombe.10_singles.gap+30", "coverage", 0.95, micro_gap_newcombe,
          Design(k=10, singles=10, gap=30.0), note="true gap +30 points"),
    _cell("gap.overall_ci.bca.occupation.rho+0.6", "coverage", 0.95, overall_gap_bca,
          Design(k=20, singles=3, rho=0.6, gap=20.0), 1000, fast=(Design(k=20, singles=3, rho=0.6, gap=20.0), 200),
          note="overall gap, occupation design"),
    _cell("gap.permutation.raw.rho+0.6", "size", ALPHA, gap_test, Design(k=10, singles=3, rho=0.6), 999, False,
          fast=(Design(k=10, singles=3, rho=0.6), 199, False),
          note="the pre-issue-22 test (raw difference), for the record", legacy=True),
    *[_cell(f"gap.permutation.studentized.rho{rho:+.1f}", "size", ALPHA, gap_test, Design(k=10, singles=3, rho=rho),
            999, True, fast=(Design(k=10, singles=3, rho=rho), 199, True),
            note="studentized (Welch-type, image-cluster-robust SE)") for rho in (-0.6, 0.0, 0.6)],
    _cell("gap.permutation.studentized.occupation.rho+0.6", "size", ALPHA, gap_test,
          Design(k=20, singles=3, rho=0.6), 999, True, fast=(Design(k=20, singles=3, rho=0.6), 199, True),
          note="occupation design (800 paired, 120 single images)"),
    _cell("gap.permutation.studentized.power.gap+30", "power", 0.80, gap_test,
          Design(k=20, singles=3, rho=0.3, gap=30.0), 999, True,
          fast=(Design(k=20, singles=3, rho=0.3, gap=30.0), 199, True),
          note="occupation design, true gap +30 points"),
    _cell("amplification.ttest.3_images", "size", ALPHA, amplification_ttest, 3, legacy=True,
          note="the paper's t-test after the exclusion, 3 images per identity: now left out with a warning"),
    _cell("amplification.ttest.40_images", "size", ALPHA, amplification_ttest, 40, legacy=True,
          note="the paper's t-test after the exclusion, 40 images: kept for the paper, labelled uncalibrated"),
    *[_cell(f"amplification.calibrated.{n}_images", "size", ALPHA, amplification_calibrated, n, 0.0, 999,
            fast=(n, 0.0, 299), note="parametric bootstrap under generated = reference, exclusion inside each draw")
      for n in (20, 40)],
    _cell("amplification.calibrated.20_images.power+10", "power", 0.80, amplification_calibrated, 20, 10.0, 999,
          fast=(20, 10.0, 299), note="amplification of 10 points, 30 identities"),
    _cell("intervention.top_5.same_images", "size", ALPHA, intervention_test, INTERVENTION, 200, 499, "top_5",
          fast=(SMALL_INTERVENTION, 50, 199, "top_5"), legacy=True,
          note="selected and tested on the same plain images: reported, labelled conditional"),
    *[_cell(f"intervention.{v}", "size", ALPHA, intervention_test, INTERVENTION, 200, 499, v,
            fast=(SMALL_INTERVENTION, 50, 199, v), note=note)
      for v, note in (("top_5_split", "selected on half of the plain images, compared on the other half"),
                      ("all", "every identity, no selection"))],
    _cell("intervention.all.test_only", "size", ALPHA, intervention_all_test, INTERVENTION, 499,
          fast=(SMALL_INTERVENTION, 199), note="the `all` p-value alone (the report's test, no bootstrap): many runs"),
]
