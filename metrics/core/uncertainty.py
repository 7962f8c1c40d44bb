"""Uncertainty: cluster (image) bootstrap intervals and a permutation test.

Persons / questions of the same image are not independent (one image, one
generation), so resampling is done over IMAGES: a bootstrap draw picks
``n_images`` images with replacement and every row of a picked image comes along
(as many times as the image was picked).

Vectorised form: most metrics here are functions of per-image column sums (e.g.
STS = sum of w*s / sum of w). :func:`cluster_bootstrap` sums the value columns per
image once, draws a ``(B, n_images)`` multiplicity matrix with one ``bincount``,
and gets every draw's column totals with one matrix product; the statistic is then
evaluated on a ``(B, k)`` array at once. :func:`bootstrap_ci` is the generic
fallback for a statistic that needs the rows themselves (one call per draw, never
per row).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, encode
from .draws import draw_blocks
from .pst import Treatment, stereo_weights

__all__ = [
    "Interval",
    "cluster_sums",
    "multiplicities",
    "cluster_bootstrap",
    "cluster_bootstrap_sums",
    "bootstrap_ci",
    "sts_bootstrap_ci",
    "PermutationResult",
    "permutation_test_clusters",
    "permutation_test_sts",
    "permutation_test_studentized",
    "permutation_test_sts_studentized",
]

#: Keep (draws x images) blocks at most this many cells (memory bound).
_MAX_CELLS = 5_000_000


@dataclass(frozen=True)
class Interval:
    """Point estimate and percentile interval. ``estimate``/``low``/``high`` are
    floats for a scalar statistic, arrays for a vector one."""

    estimate: Any
    low: Any
    high: Any
    confidence: float
    n_boot: int
    n_clusters: int
    seed: int | None


def cluster_sums(cluster_ids: ArrayLike, values: ArrayLike) -> tuple[NDArray[Any], NDArray[np.float64]]:
    """Sum the columns of ``values`` (rows x k, or 1-D) per cluster.

    Returns ``(cluster_ids_sorted, sums)`` with ``sums`` of shape (n_clusters, k)."""
    codes, ids = encode(as_1d(cluster_ids, "cluster_ids"))
    v = np.asarray(values, dtype=float)
    if v.ndim == 1:
        v = v[:, None]
    if v.shape[0] != codes.size:
        raise ValueError("values must have one row per cluster id")
    n, k = len(ids), v.shape[1]
    sums = np.empty((n, k))
    for j in range(k):  # loop over columns (few), bincount over rows
        sums[:, j] = np.bincount(codes, weights=v[:, j], minlength=n)
    return ids, sums


def multiplicities(rng: np.random.Generator, n_boot: int, n_clusters: int) -> NDArray[np.float64]:
    """``(n_boot, n_clusters)`` matrix: how often each cluster is drawn in each
    bootstrap sample (draw indices, then one bincount over ``b * n + index``)."""
    idx = rng.integers(0, n_clusters, size=(n_boot, n_clusters))
    idx += (np.arange(n_boot) * n_clusters)[:, None]  # in place: one (B, n) array, not three
    flat = idx.ravel()
    return np.bincount(flat, minlength=n_boot * n_clusters).reshape(n_boot, n_clusters).astype(float)


def _chunks(n_boot: int, n_clusters: int) -> Iterator[int]:
    return draw_blocks(n_boot, n_clusters, _MAX_CELLS)


def _percentiles(draws: NDArray[np.float64], confidence: float) -> tuple[Any, Any]:
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.nanpercentile(draws, [100 * alpha, 100 * (1 - alpha)], axis=0)
    if np.ndim(lo) == 0:
        return float(lo), float(hi)
    return lo, hi


def cluster_bootstrap(
    cluster_ids: ArrayLike,
    values: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    return_draws: bool = False,
) -> Interval | tuple[Interval, NDArray[np.float64]]:
    """Percentile bootstrap over clusters for a statistic of column totals.

    ``values`` is rows x k (e.g. columns ``w*s`` and ``w`` for STS); ``statistic``
    maps a ``(B, k)`` array of column totals to ``(B,)`` or ``(B, m)``; it must be
    vectorised over the first axis. Estimate = statistic of the full-sample
    totals; interval = the ``(1-confidence)/2`` and ``1-(1-confidence)/2``
    percentiles of the B draws (NaN draws, e.g. a draw with an empty denominator,
    are ignored). Seeded with ``numpy.random.default_rng(seed)``, so the same seed
    and data give the same interval.
    """
    _, sums = cluster_sums(cluster_ids, values)
    return cluster_bootstrap_sums(sums, statistic, n_boot, confidence, seed, return_draws)


def cluster_bootstrap_sums(
    sums: ArrayLike,
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
    return_draws: bool = False,
) -> Interval | tuple[Interval, NDArray[np.float64]]:
    """:func:`cluster_bootstrap` from precomputed per-cluster column sums (n_clusters x k), for
    callers that build the sums themselves (e.g. one bincount over (cluster, column) pairs)."""
    sums = np.asarray(sums, dtype=float)
    n = sums.shape[0]
    if n == 0:
        raise ValueError("no clusters")
    rng = np.random.default_rng(seed)
    est = np.asarray(statistic(sums.sum(axis=0)[None, :]))[0]
    parts = []
    for m in _chunks(n_boot, n):
        parts.append(np.asarray(statistic(multiplicities(rng, m, n) @ sums)))
    draws = np.concatenate(parts, axis=0)
    lo, hi = _percentiles(draws, confidence)
    estimate = float(est) if np.ndim(est) == 0 else est
    iv = Interval(estimate, lo, hi, confidence, n_boot, n, seed)
    return (iv, draws) if return_draws else iv


def bootstrap_ci(
    cluster_ids: ArrayLike,
    statistic: Callable[[NDArray[np.intp]], float],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> Interval:
    """Generic cluster percentile bootstrap for any statistic of the rows.

    ``statistic(rows)`` receives an integer index array into the caller's row
    arrays (rows of resampled clusters, repeated as often as the cluster was
    drawn) and returns a float. Costs one Python call per draw; prefer
    :func:`cluster_bootstrap` when the statistic is a function of column sums.
    """
    codes, ids = encode(as_1d(cluster_ids, "cluster_ids"))
    n = len(ids)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(n))
    sizes = np.bincount(codes, minlength=n)
    rng = np.random.default_rng(seed)
    est = float(statistic(np.arange(codes.size)))
    draws = np.empty(n_boot)
    for b in range(n_boot):
        picked = rng.integers(0, n, size=n)
        # rows of the picked clusters: repeat each cluster's start, add offsets
        lens = sizes[picked]
        first = np.repeat(starts[picked], lens)
        offs = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
        draws[b] = statistic(order[first + offs])
    lo, hi = _percentiles(draws, confidence)
    return Interval(est, lo, hi, confidence, n_boot, n, seed)


def _ratio_stat(t: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * t[:, 0] / t[:, 1]


def sts_bootstrap_ci(
    image_ids: ArrayLike,
    labels: ArrayLike,
    stereotypes: ArrayLike,
    treatment: Treatment = "paper",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> Interval:
    """Image-cluster bootstrap interval for the overall STS (formula 1), under the
    given treatment of Cannot identify / ties (see :mod:`metrics.core.pst`)."""
    s, w = stereo_weights(labels, stereotypes, treatment)
    vals = np.stack([s.astype(float) * w, w.astype(float)], axis=1)
    res = cluster_bootstrap(image_ids, vals, _ratio_stat, n_boot, confidence, seed)
    assert isinstance(res, Interval)
    return res


@dataclass(frozen=True)
class PermutationResult:
    """``observed`` = stat(group 1) - stat(group 0); two-sided ``p_value``."""

    observed: float
    p_value: float
    n_perm: int
    seed: int | None
    statistic: str = "difference"


def _cluster_groups(cluster_ids: ArrayLike, cluster_group: ArrayLike, numerator: ArrayLike,
                    denominator: ArrayLike | None) -> tuple[NDArray[np.float64], NDArray[np.bool_], int]:
    """Per-cluster sums (numerator, denominator, group) of the permutation tests, the clusters'
    0/1 group (ValueError unless constant within each cluster) and the size of group 1 (ValueError
    unless both groups have a cluster)."""
    num = np.asarray(numerator, dtype=float)
    den = np.ones_like(num) if denominator is None else np.asarray(denominator, dtype=float)
    grp = np.asarray(cluster_group).astype(int)
    ids, sums = cluster_sums(cluster_ids, np.stack([num, den, grp], axis=1))
    codes, _ = encode(as_1d(cluster_ids, "cluster_ids"))
    counts = np.bincount(codes, minlength=len(ids))
    g = sums[:, 2] / np.maximum(counts, 1)
    if not np.all((g == 0) | (g == 1)):
        raise ValueError("cluster_group must be 0/1 and constant within each cluster")
    groups: NDArray[np.bool_] = g.astype(bool)
    n1 = int(groups.sum())
    if n1 == 0 or n1 == groups.size:
        raise ValueError("both groups need at least one cluster")
    return sums, groups, n1


def _permutation_masks(seed: int | None, n_perm: int, n: int, n1: int) -> Iterator[NDArray[np.float64]]:
    """`n_perm` random relabellings of `n` clusters keeping `n1` in group 1, in memory-bounded
    chunks of rows (a 0/1 mask per row: the argsort of uniform keys, first `n1` -> group 1)."""
    rng = np.random.default_rng(seed)
    for m in _chunks(n_perm, n):
        # The n1 smallest keys of each row: argpartition selects the same set as argsort's first n1
        # (the keys are distinct almost surely) in linear time.
        keys = rng.random((m, n))
        first = np.argpartition(keys, n1 - 1, axis=1)[:, :n1] if 0 < n1 < n else np.argsort(keys, axis=1)[:, :n1]
        mask = np.zeros((m, n))
        np.put_along_axis(mask, first, 1.0, axis=1)
        yield mask


def permutation_test_clusters(
    cluster_ids: ArrayLike,
    cluster_group: ArrayLike,
    numerator: ArrayLike,
    denominator: ArrayLike | None = None,
    n_perm: int = 1000,
    seed: int | None = 0,
) -> PermutationResult:
    """Permutation test of a difference in ratio means between two groups of clusters.

    Rows carry ``cluster_ids`` (images), a 0/1 ``cluster_group`` (e.g. 1 = paired,
    0 = single; must be constant within a cluster) and ``numerator`` /
    ``denominator`` values (denominator defaults to 1 per row). Statistic:
    ``D = sum_num(g1)/sum_den(g1) - sum_num(g0)/sum_den(g0)``. Null: the group
    label is exchangeable over clusters; each permutation shuffles the labels of
    the clusters (keeping the group sizes), vectorised as a ``(n_perm,
    n_clusters)`` 0/1 matrix times the per-cluster sums. Two-sided p-value with
    the +1 correction: ``(1 + #{|D_perm| >= |D_obs|}) / (n_perm + 1)``.
    """
    sums, g, n1 = _cluster_groups(cluster_ids, cluster_group, numerator, denominator)

    def diff(mask: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(invalid="ignore", divide="ignore"):
            a = (mask @ sums[:, 0]) / (mask @ sums[:, 1])
            b = ((1 - mask) @ sums[:, 0]) / ((1 - mask) @ sums[:, 1])
        return a - b

    observed = float(diff(g.astype(float)[None, :])[0])
    hits = 0
    done = 0
    for mask in _permutation_masks(seed, n_perm, g.size, n1):
        d = diff(mask)
        hits += int(np.sum(np.abs(d) >= abs(observed) - 1e-12))
        done += mask.shape[0]
    return PermutationResult(observed, (1 + hits) / (done + 1), done, seed)


def permutation_test_sts(
    image_ids: ArrayLike,
    is_paired: ArrayLike,
    labels: ArrayLike,
    stereotypes: ArrayLike,
    treatment: Treatment = "paper",
    n_perm: int = 1000,
    seed: int | None = 0,
) -> PermutationResult:
    """Permutation test of paired minus single overall STS (in percent points).

    One row per person; ``is_paired`` is the setting of the person's image. The
    setting label is shuffled over images (all persons of an image move together),
    see :func:`permutation_test_clusters`. Cannot identify / ties follow
    ``treatment``."""
    s, w = stereo_weights(labels, stereotypes, treatment)
    res = permutation_test_clusters(
        image_ids, np.asarray(is_paired).astype(int), 100.0 * s * w, w, n_perm, seed
    )
    return res


def permutation_test_studentized(
    cluster_ids: ArrayLike,
    cluster_group: ArrayLike,
    numerator: ArrayLike,
    denominator: ArrayLike | None = None,
    n_perm: int = 1000,
    seed: int | None = 0,
) -> PermutationResult:
    """Studentized permutation test of a difference in ratio means between two groups of clusters.

    As :func:`permutation_test_clusters` (labels shuffled over whole clusters), but the statistic of
    every permutation is Welch-type: ``t = (R1 - R0) / sqrt(V1 + V0)`` with ``R = sum(y)/sum(w)`` of
    a group and its cluster-robust (linearised) variance ``V = m/(m-1) sum_c (y_c - R w_c)^2 / W^2``
    over the group's m clusters. Shuffling raw differences is exact only when the two groups'
    clusters are exchangeable; with unequal cluster sizes or variances (single images carry one
    person, paired images two, possibly correlated) its null distribution is too narrow or too wide.
    The studentized statistic is asymptotically pivotal, so the test keeps its size either way
    (Janssen 1997; Chung & Romano 2013). ``observed`` is still the raw difference; the p-value is
    two-sided on |t| with the +1 correction."""
    sums, g, n1 = _cluster_groups(cluster_ids, cluster_group, numerator, denominator)
    y, w = sums[:, 0], sums[:, 1]
    cols = np.stack([y, w, y * y, y * w, w * w, np.ones_like(y)], axis=1)

    def parts(mask: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        t = mask @ cols
        with np.errstate(invalid="ignore", divide="ignore"):
            r = t[:, 0] / t[:, 1]
            m = t[:, 5]
            v = m / (m - 1) * (t[:, 2] - 2 * r * t[:, 3] + r * r * t[:, 4]) / t[:, 1] ** 2
        return r, np.maximum(v, 0.0)

    def tstat(mask: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        r1, v1 = parts(mask)
        r0, v0 = parts(1.0 - mask)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.sqrt(v1 + v0)
            t = np.where(se > 0, (r1 - r0) / np.where(se > 0, se, 1.0), np.where(r1 == r0, 0.0, np.inf))
        return r1 - r0, t

    diff_obs, t_obs = tstat(g.astype(float)[None, :])
    observed, t0 = float(diff_obs[0]), float(t_obs[0])
    if not np.isfinite(observed):
        return PermutationResult(observed, float("nan"), 0, seed, "studentized")
    hits = 0
    done = 0
    for mask in _permutation_masks(seed, n_perm, g.size, n1):
        _, t = tstat(mask)
        hits += int(np.sum(np.abs(np.nan_to_num(t, nan=0.0)) >= abs(t0) - 1e-12 * max(1.0, abs(t0))))
        done += mask.shape[0]
    return PermutationResult(observed, (1 + hits) / (done + 1), done, seed, "studentized")


def permutation_test_sts_studentized(
    image_ids: ArrayLike,
    is_paired: ArrayLike,
    labels: ArrayLike,
    stereotypes: ArrayLike,
    treatment: Treatment = "paper",
    n_perm: int = 1000,
    seed: int | None = 0,
) -> PermutationResult:
    """Paired minus single overall STS (percent points), tested with the studentized permutation
    test (:func:`permutation_test_studentized`; the report's `pst.gap.permutation_test`)."""
    s, w = stereo_weights(labels, stereotypes, treatment)
    return permutation_test_studentized(image_ids, np.asarray(is_paired).astype(int), 100.0 * s * w, w, n_perm, seed)
