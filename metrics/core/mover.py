"""MOVER intervals for a linear combination of independent proportions (Zou & Donner 2008, "Construction
of confidence limits about effect measures: a general approach"; Newcombe's hybrid score interval for two
proportions is the two-term case with Wilson limits), each proportion's limits from Jeffreys' interval
(the Beta(x + 1/2, n - x + 1/2) quantiles, 0 / 1 at x = 0 / n; statsmodels ``proportion_confint``), and
the test that inverts them. Jeffreys, not Wilson: on compare's sparse GEP cells (counts 0-4 of 40) the
four-term MOVER covered 100% with Wilson limits (size 0%: no power) and 94.5% with Jeffreys' (size
5.5%), as Brown, Cai & DasGupta (2001) found for single proportions. Used where a bootstrap over few counts under-covers: compare's GEP vector
component difference between two sides, ``(f_A,0 - f_A,1) - (f_B,0 - f_B,1)``, at sparse attributes
(1-4 present questions of 40: the BCa interval covered 85%, bench/README.md section 10).

With estimates p_i, limits (l_i, u_i) and weights w_i, the combination's estimate is
``sum w_i p_i`` and its limits

    L = est - sqrt(sum_{w_i > 0} w_i^2 (p_i - l_i)^2 + sum_{w_i < 0} w_i^2 (u_i - p_i)^2)
    U = est + sqrt(sum_{w_i > 0} w_i^2 (u_i - p_i)^2 + sum_{w_i < 0} w_i^2 (p_i - l_i)^2)

Pure numpy and statsmodels."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MOVER_METHOD", "mover_interval", "mover_pvalue"]

MOVER_METHOD = "mover-jeffreys"


def _jeffreys(x: NDArray[np.float64], n: NDArray[np.float64], alpha: NDArray[np.float64]
            ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(x, n, alpha=alpha, method="jeffreys")
    p = x / n
    return np.minimum(np.asarray(lo, dtype=float), p), np.maximum(np.asarray(hi, dtype=float), p)


def mover_interval(x: ArrayLike, n: ArrayLike, weights: ArrayLike, confidence: ArrayLike = 0.95
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(estimate, low, high)`` of ``sum_i w_i x_i / n_i`` for independent binomial counts (Jeffreys
    limits per proportion).

    ``x`` / ``n``: (..., m) successes and trials of the m proportions (every n > 0); ``weights``: (m,);
    ``confidence``: a level, or one per combination (shape ``x.shape[:-1]``). NaN where an n is 0."""
    xa = np.asarray(x, dtype=float)
    na = np.asarray(n, dtype=float)
    w = np.asarray(weights, dtype=float)
    if xa.shape != na.shape or xa.shape[-1:] != w.shape:
        raise ValueError("x and n must have the same shape, with one weight per proportion (last axis)")
    if np.any(xa < 0) or np.any(xa > na):
        raise ValueError("every count must lie between 0 and its number of trials")
    ok = np.all(na > 0, axis=-1)
    safe_n = np.where(na > 0, na, 1.0)
    alpha = np.broadcast_to(1.0 - np.asarray(confidence, dtype=float)[..., None], xa.shape)
    lo, hi = _jeffreys(xa, safe_n, alpha)
    p = xa / safe_n
    est = (w * p).sum(axis=-1)
    down = np.where(w > 0, w * (p - lo), w * (p - hi))   # how far each term can pull the sum down
    up = np.where(w > 0, w * (hi - p), w * (lo - p))     # ... and up
    low = est - np.sqrt((down ** 2).sum(axis=-1))
    high = est + np.sqrt((up ** 2).sum(axis=-1))
    nan = np.full(est.shape, np.nan)
    return np.where(ok, est, nan), np.where(ok, low, nan), np.where(ok, high, nan)


def mover_pvalue(x: ArrayLike, n: ArrayLike, weights: ArrayLike, null: float = 0.0, steps: int = 40
                 ) -> NDArray[np.float64]:
    """Two-sided p-value of ``sum w_i p_i = null`` by inverting :func:`mover_interval`: one minus the
    lowest confidence level whose interval holds ``null`` (bisection over the level; the interval
    widens with it). 1 where the estimate equals the null; NaN where an n is 0."""
    xa = np.asarray(x, dtype=float)
    shape = xa.shape[:-1]
    est, _, _ = mover_interval(xa, n, weights, np.full(shape, 0.5))
    lo_c = np.zeros(shape)        # levels known not to hold the null (or 0)
    hi_c = np.full(shape, 1.0 - 1e-12)  # levels known to hold it (checked below)
    _, low, high = mover_interval(xa, n, weights, hi_c)
    holds_top = (low <= null) & (null <= high)
    for _ in range(steps):
        mid = 0.5 * (lo_c + hi_c)
        _, low, high = mover_interval(xa, n, weights, mid)
        holds = (low <= null) & (null <= high)
        hi_c = np.where(holds, mid, hi_c)
        lo_c = np.where(holds, lo_c, mid)
    p = np.where(holds_top, 1.0 - hi_c, 0.0)
    p = np.where(est == null, 1.0, p)
    return np.where(np.isfinite(est), np.clip(p, 0.0, 1.0), np.nan)
