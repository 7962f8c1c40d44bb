"""Validity cells of the human GEP figures (issue 22, "a cell for every interval the report prints"):
the GEP score's test-inversion interval, the per-attribute frequency intervals (Wilson) and the vector
components' intervals (Newcombe), each computed by the report's function
(:func:`metrics.core.metric_intervals.gep_intervals`, which `metrics.sections.gep` calls).

Simulated neutral GEP campaigns (every image answers every attribute): each image of gender g shows
attribute j with probability ``f_gj``; annotators answer Yes / No about it and the report's label is
the majority of their answers (:func:`metrics.core.aggregation.majority_vote_from_counts`), ties
handled by the report's ``gep_tie_policy``. The truth is what the report estimates: the frequency of
the report's label in the population of images (with perfect annotators, ``f_gj`` itself; with R
annotators of mixed quality, the probability that the majority says Yes, computed exactly over the
annotator pool), and the GEP score ``mean_j |f_0j - f_1j|`` of those.

Designs: the GEP paper's sparse frequencies (0.01-0.10, CogView2-like), dense ones (0.02-0.50), a true
score of exactly 0 (both genders the same), few images (40 per gender) and many (400); R = 3 majority
labels from a pool of annotators of mixed quality; R = 2 with ties under each tie policy. A frequency
or vector cell checks one attribute per run (the attribute and gender rotate with the seed).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from itertools import combinations

import numpy as np

from bench.validity_cells import Cell
from bench.validity_cells.hybrid import DENSE_M, DENSE_W, SPARSE_M, SPARSE_W
from metrics.core import metric_intervals as mi
from metrics.core.aggregation import majority_vote_from_counts

GENDERS = ("woman", "man")
PERFECT = ((1.0, 0.0),)  # one annotator who always sees the truth
# (sensitivity, false-positive rate) of each annotator of the pool: four careful, two careless
MIXED = ((0.95, 0.02), (0.95, 0.02), (0.92, 0.03), (0.92, 0.03), (0.70, 0.15), (0.65, 0.20))


def _outcomes(pool: tuple[tuple[float, float], ...], r: int, shown: bool) -> tuple[float, float, float]:
    """P(majority Yes), P(majority No), P(tie) of one question, over the r-subsets of the pool."""
    subsets = list(combinations(range(len(pool)), r)) if len(pool) > 1 else [tuple([0] * r)]
    yes = no = tie = 0.0
    for subset in subsets:
        p = [pool[k][0] if shown else pool[k][1] for k in subset]
        dist = np.array([1.0])  # distribution of the number of Yes answers
        for q in p:
            dist = np.convolve(dist, [1 - q, q])
        k = np.arange(r + 1)
        yes += float(dist[2 * k > r].sum())
        no += float(dist[2 * k < r].sum())
        tie += float(dist[2 * k == r].sum())
    n = len(subsets)
    return yes / n, no / n, tie / n


def true_frequency(f: np.ndarray, pool: tuple[tuple[float, float], ...], r: int, policy: str) -> np.ndarray:
    """The frequency the report estimates for true presence probabilities `f` (module docstring)."""
    y1, n1, t1 = _outcomes(pool, r, True)
    y0, n0, t0 = _outcomes(pool, r, False)
    yes, tie, no = f * y1 + (1 - f) * y0, f * t1 + (1 - f) * t0, f * n1 + (1 - f) * n0
    if policy == "absent":
        return yes
    if policy == "present":
        return yes + tie
    return yes / (yes + no)


@lru_cache(maxsize=1024)  # the score, frequency and vector cells of one design share a campaign
def campaign(fw: tuple[float, ...], fm: tuple[float, ...], n_images: int, pool: tuple[tuple[float, float], ...],
             r: int, policy: str, n_boot: int, seed: int) -> dict[str, object]:
    """One neutral campaign through the report's GEP intervals: {"res": gep_intervals(...), "truth": ...}."""
    rng = np.random.default_rng([seed, 22])
    na = len(fw)
    f = np.array([fw, fm])
    rows = []
    for g in range(2):
        shown = rng.random((n_images, na)) < f[g][None, :]
        who = np.argsort(rng.random((n_images * na, len(pool))), axis=1)[:, :r] if len(pool) > 1 else \
            np.zeros((n_images * na, r), dtype=int)
        sens = np.array([a for a, _ in pool])[who]
        fpr = np.array([b for _, b in pool])[who]
        p_yes = np.where(shown.reshape(-1, 1), sens, fpr)
        yes = (rng.random(p_yes.shape) < p_yes).sum(axis=1)
        counts = np.stack([r - yes, yes], axis=1)
        labels, _ = majority_vote_from_counts(counts, ["no", "yes"])
        image = np.repeat(np.arange(n_images) + g * n_images, na)
        rows.append((image, np.full(image.size, GENDERS[g]), np.tile([f"a{j}" for j in range(na)], n_images), labels))
    image, gender, attribute, label = (np.concatenate([row[i] for row in rows]) for i in range(4))
    res = mi.gep_intervals(image, gender, attribute, label.astype(str), list(GENDERS), [f"a{j}" for j in range(na)],
                           policy, n_boot, 0.95, seed)  # type: ignore[arg-type]
    truth = np.array([true_frequency(f[g], pool, r, policy) for g in range(2)])
    return {"res": res, "truth": truth}


def _inside(ci: object, truth: float) -> bool:
    lo, hi = ci.low, ci.high  # type: ignore[attr-defined]
    return bool(np.isfinite(lo) and np.isfinite(hi) and lo - 1e-12 <= truth <= hi + 1e-12)


def score_covers(design: tuple[object, ...], n_boot: int, seed: int) -> bool:
    """The GEP score's interval covers the true score and holds its estimate (a run where it does not fails)."""
    c = campaign(*design, n_boot, seed)  # type: ignore[arg-type]
    truth = c["truth"]
    ci = c["res"]["score"]  # type: ignore[index]
    if not ci.low <= ci.estimate <= ci.high:
        return False
    return _inside(ci, float(np.mean(np.abs(truth[0] - truth[1]))))  # type: ignore[index]


def frequency_covers(design: tuple[object, ...], n_boot: int, seed: int) -> bool:
    c = campaign(*design, n_boot, seed)  # type: ignore[arg-type]
    na = len(design[0])  # type: ignore[arg-type]
    j, g = seed % na, (seed // na) % 2
    return _inside(c["res"]["frequencies"][GENDERS[g]][f"a{j}"], float(c["truth"][g, j]))  # type: ignore[index]


def vector_covers(design: tuple[object, ...], n_boot: int, seed: int) -> bool:
    c = campaign(*design, n_boot, seed)  # type: ignore[arg-type]
    na = len(design[0])  # type: ignore[arg-type]
    j = seed % na
    truth = c["truth"]
    return _inside(c["res"]["vector"][f"a{j}"], float(truth[0, j] - truth[1, j]))  # type: ignore[index]


def _design(fw: np.ndarray, fm: np.ndarray, n_images: int, pool: tuple[tuple[float, float], ...] = PERFECT,
            r: int = 1, policy: str = "absent") -> tuple[object, ...]:
    return (tuple(float(x) for x in fw), tuple(float(x) for x in fm), n_images, pool, r, policy)


FAST_BOOT = 200  # the score's small bootstrap (CI-sized runs)


def _cell(name: str, run: Callable[..., bool], design: tuple[object, ...], note: str) -> Cell:
    if run is score_covers:
        return Cell(name, "coverage", 0.95, partial(run, design, 1000), note, partial(run, design, FAST_BOOT))
    # the Wilson and Newcombe intervals do not resample: a token bootstrap for the score computed beside them; the
    # fast variant takes the score's, so a CI-sized run reads the campaigns its score cell computed (`campaign`'s cache)
    return Cell(name, "coverage", 0.95, partial(run, design, 20), note, partial(run, design, FAST_BOOT))


DESIGNS = {
    "sparse_40img": (_design(SPARSE_W, SPARSE_M, 40), "CogView2-like frequencies 0.01-0.10, 14 attributes, 40 images "
                                                      "per gender"),
    "sparse_400img": (_design(SPARSE_W, SPARSE_M, 400), "CogView2-like frequencies, 400 images per gender"),
    "zero_40img": (_design(SPARSE_W, SPARSE_W, 40), "true GEP score exactly 0 (sparse), 40 images per gender"),
    "zero_400img": (_design(SPARSE_W, SPARSE_W, 400), "true GEP score exactly 0 (sparse), 400 images per gender"),
    "dense_40img": (_design(DENSE_W, DENSE_M, 40), "8 attributes, frequencies 0.02-0.50, 40 images per gender"),
    "dense_400img": (_design(DENSE_W, DENSE_M, 400), "dense frequencies, 400 images per gender"),
    "r3_mixed_sparse_100img": (_design(SPARSE_W, SPARSE_M, 100, MIXED, 3),
                               "majority of 3 from a pool of 4 careful and 2 careless annotators, sparse, 100 images"),
    "r3_mixed_dense_100img": (_design(DENSE_W, DENSE_M, 100, MIXED, 3), "majority of 3, mixed quality, dense"),
    **{f"r2_ties_{p}_100img": (_design(DENSE_W, DENSE_M, 100, MIXED, 2, p),
                               f"2 annotators of mixed quality (ties), tie policy `{p}`, dense, 100 images")
       for p in ("absent", "present", "exclude")},
}
SCORE_NOTE = "; test inversion, fails a run whose interval excludes its estimate"
CELLS: list[Cell] = [
    *[_cell(f"score.{k}", score_covers, d, note + SCORE_NOTE) for k, (d, note) in DESIGNS.items()],
    *[_cell(f"frequency.{k}", frequency_covers, d, note + "; Wilson, one attribute and gender per run")
      for k, (d, note) in DESIGNS.items()],
    *[_cell(f"vector.{k}", vector_covers, d, note + "; Newcombe, one attribute per run")
      for k, (d, note) in DESIGNS.items()],
]
