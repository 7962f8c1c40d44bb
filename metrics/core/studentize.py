"""The studentized form of the permutation tests of :mod:`metrics.core.significance` (issue 22):
the standard error of a difference of two sides' statistics, each a smooth function of per-image
column totals, by the delta method over images. Pure numpy."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["studentizer"]


def _gradient(statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]], t: NDArray[np.float64]
              ) -> NDArray[np.float64]:
    """d statistic / d totals at stratum totals ``t`` (S, k), by forward differences: (S, k, m)."""
    n = t.size
    h = 1e-6 * np.maximum(np.abs(t.reshape(-1)), 1.0)
    pts = np.repeat(t.reshape(1, -1), n + 1, axis=0)
    pts[np.arange(1, n + 1), np.arange(n)] += h
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = np.asarray(statistic(pts.reshape((n + 1, *t.shape))), dtype=float).reshape(n + 1, -1)
    return ((vals[1:] - vals[0]) / h[:, None]).reshape((*t.shape, -1))


def _cluster_variance(u_sum: NDArray[np.float64], u2_sum: NDArray[np.float64], n: NDArray[np.float64]
                      ) -> NDArray[np.float64]:
    """Variance of a side's statistic from its linearised image values u (sums of u and u^2 per stratum,
    (..., S, m), and images per stratum (S,)): sum over strata of n/(n-1) sum (u - mean u)^2."""
    nn = n.reshape((1,) * (u_sum.ndim - 2) + (-1, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        ss = np.where(nn > 0, u2_sum - u_sum ** 2 / np.maximum(nn, 1), 0.0)
    return np.maximum(ss * nn / np.maximum(nn - 1, 1), 0.0).sum(axis=-2)


def studentizer(s: NDArray[np.float64], sd: NDArray[np.intp], rows: list[NDArray[np.intp]],
                 tot: NDArray[np.float64], obs_a: NDArray[np.float64],
                 statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]]
                 ) -> tuple[NDArray[np.float64], Callable[[NDArray[np.float64]], NDArray[np.float64]],
                            NDArray[np.float64]]:
    """The standard error of ``statistic(A) - statistic(B)`` for the studentized test (issue 22: raw
    differences shuffled between sides of unequal sizes or variances have a null distribution that is
    too narrow or too wide; the studentized statistic is asymptotically pivotal, Janssen 1997, Chung &
    Romano 2013). Delta method over images: each side's statistic is linearised at its totals (the
    observed sides) or at the totals a random split gives on average (the shuffled sides), an image's
    value is ``u = gradient . x``, and a side's variance is the within-stratum variance of its images'
    u, summed. Returns the rows with the columns u_A, u_A^2, u_B, u_B^2 appended (their side-A totals
    come with every permutation), the function giving the standard error of permuted side-A totals,
    and the observed standard error."""
    k = s.shape[1]
    n_tot = np.array([r.size for r in rows], dtype=float)
    n_a = np.array([(sd[r] == 0).sum() for r in rows], dtype=float)
    stratum = np.zeros(s.shape[0], dtype=np.intp)
    for j, r in enumerate(rows):
        stratum[r] = j

    def lin(grad: NDArray[np.float64]) -> NDArray[np.float64]:  # (n, m): each image's u
        # One (n_j, k) @ (k, m) product per stratum: grad[stratum] would copy a (k, m) matrix per image.
        u = np.empty((s.shape[0], grad.shape[-1]))
        for j, r in enumerate(rows):
            u[r] = s[r] @ grad[j]
        return np.nan_to_num(u)

    def side_var(u: NDArray[np.float64], mask: NDArray[np.bool_]) -> NDArray[np.float64]:
        su = np.stack([u[r][mask[r]].sum(axis=0) for r in rows])
        su2 = np.stack([(u[r][mask[r]] ** 2).sum(axis=0) for r in rows])
        return _cluster_variance(su, su2, np.array([mask[r].sum() for r in rows], dtype=float))

    is_a = sd == 0
    se_obs = np.sqrt(side_var(lin(_gradient(statistic, obs_a)), is_a)
                     + side_var(lin(_gradient(statistic, tot - obs_a)), ~is_a))
    share = np.where(n_tot > 0, n_a / np.maximum(n_tot, 1), 0.0)[:, None]
    ua, ub = lin(_gradient(statistic, share * tot)), lin(_gradient(statistic, (1 - share) * tot))
    m = ua.shape[1]
    aug = np.concatenate([s, ua, ua ** 2, ub, ub ** 2], axis=1)
    tot_aug = np.stack([aug[r].sum(axis=0) for r in rows])

    def scale(a: NDArray[np.float64]) -> NDArray[np.float64]:
        b = tot_aug[None] - a
        va = _cluster_variance(a[..., k:k + m], a[..., k + m:k + 2 * m], n_a)
        vb = _cluster_variance(b[..., k + 2 * m:k + 3 * m], b[..., k + 3 * m:], n_tot - n_a)
        return np.asarray(np.sqrt(va + vb))

    return aug, scale, se_obs

