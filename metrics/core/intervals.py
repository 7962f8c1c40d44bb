"""Confidence intervals that contain their estimate and keep their stated coverage.

The report's current intervals (:mod:`metrics.core.uncertainty`) are percentile
bootstrap intervals. For a biased statistic the percentile interval is shifted by
the bias and can exclude its own estimate: the GEP score (a mean of absolute
differences) is biased upward near 0, and on the GEP authors' MTurk data CogView2's
neutral GEP 0.0233 got the percentile interval [0.0248, 0.0534]. This module adds,
next to the existing functions (whose outputs do not change), one interval method per
kind of statistic, each with a name the report can print (:data:`METHODS`):

=====================================  =================================================
statistic                              method (``CI.method``)
=====================================  =================================================
PST overall / group / per-run STS,     ``"bca-cluster"``: BCa bootstrap over image
differences of smooth statistics       clusters (Efron 1987; Efron & Tibshirani 1993,
                                       14.3 and 15.36), acceleration from the
                                       leave-one-image-out jackknife.
per-identity micro STS, %F, AG         ``"wilson-deff"``: Wilson score interval with the
(a share of persons)                   effective sample size n / deff (Kish design
                                       effect from image clusters, floored at 1).
a GEP vector component v_j             ``"newcombe"``: Newcombe's hybrid score interval
                                       for a difference of two independent proportions
                                       (the two genders come from disjoint images).
the GEP score (1/n) sum |v_j|, and     ``"gep-test-inversion"``: inversion of a
any mean of absolute differences       bootstrap test, see
                                       :func:`metrics.core.metric_intervals.abs_mean_interval`.
=====================================  =================================================

This module holds the machinery (the :class:`CI` result, BCa over clusters and strata,
Wilson / Newcombe, the design effect); :mod:`metrics.core.metric_intervals` applies it
to the PST and GEP statistics from per-person / per-question rows.

Every function returns a :class:`CI` whose interval contains the estimate: where the
method's endpoint would exclude it (possible only for a degenerate bootstrap
distribution, or for the GEP inversion when the observed score is higher than every
candidate value would make likely) the endpoint is moved to the estimate and
``extended`` says so. Coverage is checked by simulation in
``tests/metrics/core/test_interval_coverage.py`` and ``bench/interval_coverage.py``.

All inputs are plain numpy arrays; per-cluster column sums are built with
:func:`metrics.core.uncertainty.cluster_sums` or by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri

from ._arrays import as_1d, encode
from .draws import multiplicities

__all__ = [
    "METHODS",
    "CI",
    "bca_endpoints",
    "cluster_jackknife",
    "stratified_cluster_draws",
    "stratified_cluster_bca",
    "cluster_bca",
    "design_effect",
    "wilson_interval",
    "newcombe_interval",
]

#: Interval method per statistic, for the report's "how was this interval made" line.
METHODS: dict[str, str] = {
    "pst.overall": "bca-cluster",
    "pst.groups": "bca-cluster",
    "pst.runs_mean": "bca-cluster",
    "pst.micro": "wilson-deff",
    "pst.percent_feminine": "wilson-deff",
    "vlm.average_gender": "wilson-deff",
    "vlm.neutrality": "neutrality-test-inversion",
    "gep.vector": "newcombe",
    "gep.frequencies": "wilson",
    "gep.score": "gep-test-inversion",
    "difference": "bca-cluster",
}

_MAX_CELLS = 4_000_000  # (draws x clusters) cells per block: bounds memory


@dataclass(frozen=True)
class CI:
    """An interval and how it was made.

    ``estimate`` / ``low`` / ``high`` are floats for one statistic, arrays for
    several (then ``extended`` is a bool array). ``extended`` is True where an
    endpoint was moved to the estimate to keep it inside (see the module docstring).
    ``n_clusters`` is the number of resampling units (images); ``n_boot`` and
    ``seed`` are ``None`` for closed-form intervals."""

    estimate: Any
    low: Any
    high: Any
    confidence: float
    method: str
    n_clusters: int | None = None
    n_boot: int | None = None
    seed: int | None = None
    extended: Any = False
    notes: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        def plain(x: Any) -> Any:
            if isinstance(x, np.ndarray):
                return x.tolist()
            if isinstance(x, np.generic):
                return x.item()
            return x

        return {
            "estimate": plain(self.estimate),
            "ci": [plain(self.low), plain(self.high)],
            "confidence": self.confidence,
            "method": self.method,
            "n_clusters": self.n_clusters,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "extended": plain(self.extended),
            **({"notes": self.notes} if self.notes else {}),
        }


def _scalar(x: NDArray[Any]) -> Any:
    return float(x[0]) if np.ndim(x) == 1 and x.size == 1 else x


def _contain(est: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64]
             ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Move an endpoint that excludes the estimate onto it (NaN estimates stay NaN)."""
    ok = np.isfinite(est)
    bad_lo = ok & ~(lo <= est)
    bad_hi = ok & ~(hi >= est)
    lo = np.where(bad_lo, est, lo)
    hi = np.where(bad_hi, est, hi)
    return lo, hi, bad_lo | bad_hi


# ------------------------------------------------------------------------------------ BCa
def _column_quantiles(draws: NDArray[np.float64], levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-column quantile at a per-column level (linear interpolation, NaN draws ignored)."""
    s = np.sort(draws, axis=0)  # NaN sort last
    n = np.sum(np.isfinite(draws), axis=0)
    out = np.full(draws.shape[1], np.nan)
    ok = n > 0
    pos = levels[ok] * (n[ok] - 1)
    i0 = np.floor(pos).astype(int)
    i1 = np.minimum(i0 + 1, n[ok] - 1)
    cols = np.flatnonzero(ok)
    frac = pos - i0
    out[ok] = s[i0, cols] * (1 - frac) + s[i1, cols] * frac
    return out


def bca_endpoints(
    estimate: ArrayLike,
    draws: ArrayLike,
    jackknife: ArrayLike | Sequence[ArrayLike],
    confidence: float = 0.95,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """BCa interval endpoints, column by column.

    ``estimate`` (m,), ``draws`` (B, m) bootstrap replicates, ``jackknife`` the
    leave-one-unit-out replicates: one (n, m) array, or a list of them, one per
    independently resampled sample (stratum), as in :func:`scipy.stats.bootstrap`.

    Formulas (Efron & Tibshirani 1993, 14.3 and 15.36; the multi-sample acceleration
    as in scipy): ``z0 = Phi^-1(share of draws < estimate, ties counted half)``;
    ``U_ji = (n_j - 1)(mean_i theta_(ji) - theta_(ji))``;
    ``a = sum_j sum_i U_ji^3 / n_j^3 / (6 (sum_j sum_i U_ji^2 / n_j^2)^(3/2))``;
    endpoint levels ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` for ``z = Phi^-1(alpha/2)``
    and ``Phi^-1(1 - alpha/2)``. NaN draws / jackknife values (e.g. a resample without
    any person of an identity) are ignored. A column whose draws all equal the
    estimate gets ``[estimate, estimate]``. The share in z0 is kept inside
    ``[1/(2B), 1 - 1/(2B)]``; a non-positive denominator takes the extreme level.

    Returns ``(low, high, extended)``; ``extended`` marks columns where an endpoint
    fell on the wrong side of the estimate (more than ``1 - alpha/2`` of the draws
    on one side of it) and was moved onto the estimate."""
    est = np.atleast_1d(np.asarray(estimate, dtype=float))
    d = np.asarray(draws, dtype=float)
    if d.ndim == 1:
        d = d[:, None]
    if d.shape[1] != est.size:
        raise ValueError("draws must have one column per estimate")
    jacks = [np.asarray(jackknife, dtype=float)] if not isinstance(jackknife, list | tuple) else [
        np.asarray(j, dtype=float) for j in jackknife]
    jacks = [j[:, None] if j.ndim == 1 else j for j in jacks]
    finite = np.isfinite(d)
    nb = finite.sum(axis=0)
    with np.errstate(invalid="ignore"):
        below = np.sum(np.where(finite, d < est, False), axis=0)
        equal = np.sum(np.where(finite, d == est, False), axis=0)
        share = (below + 0.5 * equal) / np.maximum(nb, 1)
    share = np.clip(share, 0.5 / np.maximum(nb, 1), 1 - 0.5 / np.maximum(nb, 1))
    z0 = ndtri(share)
    num = np.zeros(est.size)
    den = np.zeros(est.size)
    for j in jacks:
        n = np.sum(np.isfinite(j), axis=0).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            u = (n - 1) * (np.nanmean(j, axis=0) - j) if j.shape[0] else np.zeros_like(j)
            num += np.where(n > 0, np.nansum(u ** 3, axis=0) / np.maximum(n, 1) ** 3, 0.0)
            den += np.where(n > 0, np.nansum(u ** 2, axis=0) / np.maximum(n, 1) ** 2, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(den > 0, num / (6.0 * den ** 1.5), 0.0)
    alpha = 1.0 - confidence
    levels = []
    for z, extreme in ((ndtri(alpha / 2), 0.0), (ndtri(1 - alpha / 2), 1.0)):
        t = z0 + z
        denom = 1 - a * t
        with np.errstate(invalid="ignore", divide="ignore"):
            lev = np.where(denom > 0, ndtr(z0 + t / np.where(denom > 0, denom, 1.0)), extreme)
        levels.append(lev)
    lo = _column_quantiles(d, levels[0])
    hi = _column_quantiles(d, levels[1])
    degenerate = (nb > 0) & (equal == nb)
    lo = np.where(degenerate, est, lo)
    hi = np.where(degenerate, est, hi)
    return _contain(est, lo, hi)


def _strata_index(strata: ArrayLike | None, n: int) -> tuple[NDArray[np.intp], int]:
    if strata is None:
        return np.zeros(n, dtype=np.intp), 1
    codes = np.asarray(strata)
    if codes.shape != (n,):
        raise ValueError("strata must have one entry per cluster")
    if codes.dtype.kind not in "iu":
        codes, _ = encode(codes)
        return codes, int(codes.max()) + 1 if codes.size else 0
    if codes.size and codes.min() < 0:
        raise ValueError("strata codes must be >= 0")
    return codes.astype(np.intp), int(codes.max()) + 1 if codes.size else 0


def _stratum_totals(sums: NDArray[np.float64], codes: NDArray[np.intp], n_strata: int) -> NDArray[np.float64]:
    out = np.zeros((n_strata, sums.shape[1]))
    np.add.at(out, codes, sums)
    return out


def stratified_cluster_draws(
    sums: ArrayLike,
    strata: ArrayLike | None = None,
    n_boot: int = 2000,
    seed: int | None = 0,
) -> NDArray[np.float64]:
    """Bootstrap totals: ``(n_boot, n_strata, k)``. Each draw resamples, with
    replacement, as many clusters (images) as each stratum has, from that stratum
    only (strata: e.g. gender in GEP, run in PST, campaign or setting in a
    comparison); its totals are the column sums of the drawn clusters. One
    ``bincount`` per stratum and block and one matrix product, seeded with
    ``numpy.random.default_rng(seed)``."""
    s = np.asarray(sums, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    codes, n_strata = _strata_index(strata, s.shape[0])
    sizes = tuple(np.bincount(codes, minlength=n_strata).tolist())
    out = np.empty((n_boot, n_strata, s.shape[1]))
    for st, blocks in enumerate(multiplicities(seed, n_boot, sizes)):
        rows = s[codes == st]
        if not blocks:
            out[:, st, :] = 0.0
            continue
        # Only the columns with a nonzero sum in this stratum are multiplied: the others' totals are 0 in
        # every draw (a GEP image's cells are its own gender's, half of the columns: half the work).
        used = np.flatnonzero(np.any(rows != 0, axis=0))
        if used.size < rows.shape[1]:
            out[:, st, :] = 0.0
        rows = rows[:, used]
        # Integer sums whose every partial total stays below 2**24 (a draw takes n clusters): float32
        # products are exact, so the totals are the float64 ones at half the memory traffic.
        exact32 = bool(np.all(rows == np.round(rows))) and rows.shape[0] * float(np.abs(rows).max(initial=0)) < 2 ** 24
        rows_t = rows.astype(np.float32 if exact32 else float)
        done = 0
        for mult in blocks:
            m = mult.shape[0]
            out[done:done + m, st, used] = mult.astype(rows_t.dtype) @ rows_t
            done += m
    return out


def cluster_jackknife(
    sums: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    strata: ArrayLike | None = None,
) -> list[NDArray[np.float64]]:
    """Leave-one-cluster-out replicates, one (n_s, m) array per stratum.

    The statistic gets totals ``(J, n_strata, k)`` in which one cluster's sums are
    removed from its stratum's totals: O(n k) instead of copying n resamples."""
    s = np.asarray(sums, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    codes, n_strata = _strata_index(strata, s.shape[0])
    totals = _stratum_totals(s, codes, n_strata)
    out = []
    for st in range(n_strata):
        rows = s[codes == st]
        parts = []
        for start in range(0, rows.shape[0], max(1, _MAX_CELLS // max(1, totals.size))):
            block = rows[start:start + max(1, _MAX_CELLS // max(1, totals.size))]
            t = np.broadcast_to(totals, (block.shape[0], *totals.shape)).copy()
            t[:, st, :] -= block
            parts.append(np.asarray(statistic(t), dtype=float).reshape(block.shape[0], -1))
        out.append(np.concatenate(parts, axis=0) if parts else np.zeros((0, 1)))
    return out


def stratified_cluster_bca(
    sums: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    strata: ArrayLike | None = None,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
    return_draws: bool = False,
) -> CI | tuple[CI, NDArray[np.float64]]:
    """BCa interval (method ``"bca-cluster"``) for statistics of stratum totals.

    ``sums``: per-cluster (image) column sums, (n_clusters, k); ``strata``: the
    stratum of each cluster (None: one stratum); ``statistic`` maps totals
    ``(B, n_strata, k)`` to ``(B,)`` or ``(B, m)`` and must be vectorised over the
    first axis. Draws: :func:`stratified_cluster_draws`; acceleration: the
    leave-one-cluster-out jackknife of every stratum (:func:`cluster_jackknife`);
    endpoints: :func:`bca_endpoints`. Seeded."""
    s = np.asarray(sums, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    if s.shape[0] == 0:
        raise ValueError("no clusters")
    codes, n_strata = _strata_index(strata, s.shape[0])
    totals = _stratum_totals(s, codes, n_strata)
    est = np.asarray(statistic(totals[None]), dtype=float).reshape(1, -1)[0]
    draws = np.asarray(statistic(stratified_cluster_draws(s, codes, n_boot, seed)), dtype=float).reshape(n_boot, -1)
    jack = cluster_jackknife(s, statistic, codes)
    lo, hi, ext = bca_endpoints(est, draws, jack, confidence)
    ci = CI(_scalar(est), _scalar(lo), _scalar(hi), confidence, "bca-cluster", int(s.shape[0]), n_boot, seed,
            bool(ext[0]) if ext.size == 1 else ext)
    return (ci, draws) if return_draws else ci


def cluster_bca(
    sums: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> CI:
    """:func:`stratified_cluster_bca` with one stratum; ``statistic`` maps totals
    ``(B, k)`` to ``(B,)`` / ``(B, m)`` as in :func:`metrics.core.uncertainty.cluster_bootstrap`."""
    res = stratified_cluster_bca(sums, lambda t: statistic(t[:, 0, :]), None, n_boot, confidence, seed)
    assert isinstance(res, CI)
    return res


# -------------------------------------------------------------------- closed-form intervals
def design_effect(cluster_ids: ArrayLike, y: ArrayLike, w: ArrayLike | None = None,
                  groups: ArrayLike | None = None) -> NDArray[np.float64] | float:
    """Kish design effect of the ratio mean ``sum(w y) / sum(w)`` under clustering.

    ``deff = var_cluster / var_srs`` with the linearised cluster variance
    ``n_c / (n_c - 1) sum_c (sum_{i in c} w_i (y_i - r))^2 / W^2`` and the simple
    random sampling variance ``n / (n - 1) sum_i w_i (y_i - r)^2 / W^2`` (the same
    ratio estimator treated as n independent rows; so one row per cluster gives
    exactly 1). Floored at 1: a negative
    within-cluster correlation is not used to narrow an interval. With ``groups``
    (e.g. identities) one value per group (sorted group order) is returned. Rows with
    ``w = 0`` do not count; a group with fewer than 2 clusters gets 1."""
    ids = as_1d(cluster_ids, "cluster_ids")
    yv = np.asarray(y, dtype=float)
    wv = np.ones_like(yv) if w is None else np.asarray(w, dtype=float)
    if groups is None:
        g_codes, n_g = np.zeros(ids.size, dtype=np.intp), 1
    else:
        g_codes, g_ids = encode(as_1d(groups, "groups"))
        n_g = len(g_ids)
    c_codes, c_ids = encode(ids)
    wsum = np.bincount(g_codes, weights=wv, minlength=n_g)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.bincount(g_codes, weights=wv * yv, minlength=n_g) / wsum
    e = wv * (yv - r[g_codes])
    rows = np.bincount(g_codes, weights=(wv > 0).astype(float), minlength=n_g)
    with np.errstate(invalid="ignore", divide="ignore"):
        srs = rows / (rows - 1) * np.bincount(g_codes, weights=wv * (yv - r[g_codes]) ** 2, minlength=n_g)
    cell = g_codes * len(c_ids) + c_codes
    cu, cinv = np.unique(cell, return_inverse=True)
    csum = np.bincount(cinv, weights=e)
    cw = np.bincount(cinv, weights=wv)
    cg = cu // len(c_ids)
    used = cw > 0
    nc = np.bincount(cg[used], minlength=n_g).astype(float)
    between = np.bincount(cg[used], weights=csum[used] ** 2, minlength=n_g)
    with np.errstate(invalid="ignore", divide="ignore"):
        deff = np.where((nc > 1) & (srs > 0), nc / (nc - 1) * between / srs, 1.0)
    deff = np.maximum(np.nan_to_num(deff, nan=1.0), 1.0)
    return float(deff[0]) if groups is None else deff


def wilson_interval(successes: ArrayLike, n: ArrayLike, confidence: float = 0.95,
                    deff: ArrayLike = 1.0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score interval for a proportion (statsmodels ``proportion_confint``,
    ``method="wilson"``) with the effective sample size ``n / deff`` and effective
    successes ``successes / deff`` (Korn & Graubard 1998 style design-effect
    adjustment for clustered rows). Contains ``successes / n``; NaN where n = 0."""
    from statsmodels.stats.proportion import proportion_confint

    x = np.atleast_1d(np.asarray(successes, dtype=float))
    nn = np.atleast_1d(np.asarray(n, dtype=float))
    de = np.broadcast_to(np.asarray(deff, dtype=float), x.shape)
    lo = np.full(x.shape, np.nan)
    hi = np.full(x.shape, np.nan)
    ok = nn > 0
    if ok.any():
        lo[ok], hi[ok] = proportion_confint(x[ok] / de[ok], nn[ok] / de[ok], alpha=1 - confidence, method="wilson")
        p = x[ok] / nn[ok]  # Wilson holds p-hat; keep it so against rounding at p-hat = 0 or 1
        lo[ok], hi[ok] = np.minimum(lo[ok], p), np.maximum(hi[ok], p)
    return lo, hi


def newcombe_interval(x1: ArrayLike, n1: ArrayLike, x2: ArrayLike, n2: ArrayLike, confidence: float = 0.95
                      ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Newcombe's hybrid score interval for ``x1/n1 - x2/n2`` (two independent
    proportions; statsmodels ``confint_proportions_2indep(method="newcomb")``).
    Contains the difference; NaN where either n is 0."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    a = [np.atleast_1d(np.asarray(v, dtype=float)) for v in (x1, n1, x2, n2)]
    x1a, n1a, x2a, n2a = np.broadcast_arrays(*a)
    lo = np.full(x1a.shape, np.nan)
    hi = np.full(x1a.shape, np.nan)
    ok = (n1a > 0) & (n2a > 0)
    if ok.any():
        lo[ok], hi[ok] = confint_proportions_2indep(
            x1a[ok], n1a[ok], x2a[ok], n2a[ok], method="newcomb", compare="diff", alpha=1 - confidence)
        d = x1a[ok] / n1a[ok] - x2a[ok] / n2a[ok]
        lo[ok], hi[ok] = np.minimum(lo[ok], d), np.maximum(hi[ok], d)
    return lo, hi
