"""Resampling of clusters (images) through their distinct rows: the draws of the comparisons
(:mod:`metrics.core.significance`), with the same distributions as resampling the images one by one.

A statistic of stratum totals depends on a resample only through how many times each image is
drawn, and images whose per-image column sums are equal (the same *pattern*: in a GEP explicit
stratum, every image of one attribute whose label is "present", say) are interchangeable. So, per
stratum, with ``c_p`` images of pattern ``p`` among ``n``:

- **bootstrap** (``n`` images drawn with replacement): the number of draws of each pattern is
  ``Multinomial(n, c / n)`` (numpy ``Generator.multinomial``); the totals are ``counts @ patterns``;
- **permutation** (``n_A`` of the stratum's pooled images go to side A, without replacement): the
  number of side-A images of each pattern is multivariate hypergeometric
  (``Generator.multivariate_hypergeometric(c, n_A, method="marginals")``);
- **jackknife** (leave one image out): equal for the images of one pattern, computed once per pattern.

These are the exact distributions of the image-by-image draws (the resampling and permutation unit
is still the image); what changes is the work: one variate per pattern and draw instead of one per
image. Where a stratum has almost as many patterns as images (``PATTERN_RATIO``), the images are
drawn one by one instead (``integers`` + ``bincount`` for the bootstrap, ``Generator.permuted`` of a
0/1 side mask for the permutations). The same seed gives other draws than the image-by-image code
of :func:`metrics.core.intervals.stratified_cluster_draws` (the intervals' and p-values' definitions
are unchanged; docs/metrics.md).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .intervals import CI, bca_endpoints

__all__ = ["PATTERN_RATIO", "row_patterns", "bootstrap_totals", "permutation_totals", "pattern_jackknife",
           "pattern_cluster_bca"]

# Draws by pattern when a stratum has at least this many images per distinct pattern: a multinomial
# or hypergeometric variate costs about as much as drawing and counting this many images.
PATTERN_RATIO = 8
_MAX_CELLS = 2_000_000


def row_patterns(rows: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.int64]]:
    """``(patterns (u, k), pattern of each row (n,), rows per pattern (u,))``."""
    if rows.shape[0] == 0:
        return rows[:0], np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
    # Rows compared as raw bytes (one memcmp per comparison, not field by field as ``np.unique(axis=0)``);
    # equal rows have equal bytes (a -0.0 beside a 0.0 only splits a pattern in two, which changes nothing).
    r = np.ascontiguousarray(rows, dtype=float)
    keys = r.view(np.dtype((np.void, r.dtype.itemsize * r.shape[1]))).reshape(-1)
    _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    return r[first], inverse.reshape(-1).astype(np.intp), counts.astype(np.int64)


def _by_pattern(n: int, u: int) -> bool:
    return u * PATTERN_RATIO <= n


def bootstrap_totals(sums: NDArray[np.float64], codes: NDArray[np.intp], n_strata: int, n_boot: int,
                     rng: np.random.Generator) -> NDArray[np.float64]:
    """Bootstrap totals ``(n_boot, n_strata, k)``: each draw resamples, with replacement, as many
    images as each stratum has, from that stratum only."""
    out = np.zeros((n_boot, n_strata, sums.shape[1]))
    for st in range(n_strata):
        rows = sums[codes == st]
        n = rows.shape[0]
        if n == 0:
            continue
        pat, inv, cnt = row_patterns(rows)
        u = pat.shape[0]
        if _by_pattern(n, u):
            out[:, st, :] = rng.multinomial(n, cnt / n, size=n_boot) @ pat
            continue
        step = max(1, _MAX_CELLS // n)
        for done in range(0, n_boot, step):
            m = min(step, n_boot - done)
            cells = inv[rng.integers(0, n, size=(m, n))] + (np.arange(m) * u)[:, None]
            out[done:done + m, st, :] = np.bincount(cells.ravel(), minlength=m * u).reshape(m, u) @ pat
    return out


def permutation_totals(rows: NDArray[np.float64], n_a: int, n_perm: int,
                       rng: np.random.Generator) -> NDArray[np.float64]:
    """Side-A totals ``(n_perm, k)`` of ``n_perm`` random splits of one stratum's pooled images
    ``rows`` (n, k): ``n_a`` images, drawn without replacement, go to side A."""
    n = rows.shape[0]
    pat, inv, cnt = row_patterns(rows)
    u = pat.shape[0]
    out = np.empty((n_perm, rows.shape[1]))
    if n == 0 or n_a == 0:
        out[:] = 0.0
        return out
    if _by_pattern(n, u):
        step = max(1, _MAX_CELLS // u)
        for done in range(0, n_perm, step):
            m = min(step, n_perm - done)
            out[done:done + m] = rng.multivariate_hypergeometric(cnt, n_a, size=m, method="marginals") @ pat
        return out
    base = np.zeros(n)
    base[:n_a] = 1.0
    step = max(1, _MAX_CELLS // n)
    for done in range(0, n_perm, step):
        m = min(step, n_perm - done)
        mask = np.tile(base, (m, 1))
        rng.permuted(mask, axis=1, out=mask)
        out[done:done + m] = mask @ rows
    return out


def pattern_jackknife(sums: NDArray[np.float64], statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
                      codes: NDArray[np.intp], n_strata: int) -> list[NDArray[np.float64]]:
    """Leave-one-image-out replicates, one ``(n_s, m)`` array per stratum (rows in the order of
    ``sums[codes == s]``, as :func:`metrics.core.intervals.cluster_jackknife`), the statistic
    evaluated once per distinct pattern."""
    totals = np.zeros((n_strata, sums.shape[1]))
    np.add.at(totals, codes, sums)
    out = []
    for st in range(n_strata):
        rows = sums[codes == st]
        if rows.shape[0] == 0:
            out.append(np.zeros((0, 1)))
            continue
        pat, inv, _ = row_patterns(rows)
        parts = []
        step = max(1, _MAX_CELLS // max(1, totals.size))
        for start in range(0, pat.shape[0], step):
            block = pat[start:start + step]
            t = np.broadcast_to(totals, (block.shape[0], *totals.shape)).copy()
            t[:, st, :] -= block
            parts.append(np.asarray(statistic(t), dtype=float).reshape(block.shape[0], -1))
        out.append(np.concatenate(parts, axis=0)[inv])
    return out


def pattern_cluster_bca(sums: ArrayLike, statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
                        strata: ArrayLike, n_boot: int, confidence: float = 0.95, seed: int | None = 0) -> CI:
    """BCa interval (``"bca-cluster"``) of statistics of stratum totals, as
    :func:`metrics.core.intervals.stratified_cluster_bca` (same estimate, acceleration and endpoints),
    with the draws of :func:`bootstrap_totals` and the jackknife of :func:`pattern_jackknife`.
    ``strata``: codes 0..S-1 per image."""
    s = np.asarray(sums, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    if s.shape[0] == 0:
        raise ValueError("no clusters")
    codes = np.asarray(strata, dtype=np.intp)
    n_strata = int(codes.max()) + 1
    totals = np.zeros((n_strata, s.shape[1]))
    np.add.at(totals, codes, s)
    est = np.asarray(statistic(totals[None]), dtype=float).reshape(1, -1)[0]
    rng = np.random.default_rng(seed)
    draws = np.asarray(statistic(bootstrap_totals(s, codes, n_strata, n_boot, rng)), dtype=float).reshape(n_boot, -1)
    lo, hi, ext = bca_endpoints(est, draws, pattern_jackknife(s, statistic, codes, n_strata), confidence)
    one = est.size == 1
    return CI(float(est[0]) if one else est, float(lo[0]) if one else lo, float(hi[0]) if one else hi, confidence,
              "bca-cluster", int(s.shape[0]), n_boot, seed, bool(ext[0]) if one else ext)
