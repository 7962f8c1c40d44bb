"""Hybrid estimates: a random human sample plus machine labels on every image, by prediction-powered
inference (PPI; Angelopoulos et al. 2023, PPI++ power tuning 2023; the ``ppi-python`` package).
Pure: numpy and ppi_py, no Django.

Setting. Humans label a uniform random sample of the images (``human_sample``, stratified by setting
and, in GEP, attribute); a machine labeller labels every image. The target is what the report computes
from human labels on *all* images (the human frequency, STS, GEP score of the generator). For every
estimand three estimates are reported side by side, each with its ``confidence`` interval:

- ``estimate`` / ``ci``: the PPI estimate from the human sample (``Y``), the machine labels of the same
  units (``Yhat``) and the machine labels of the units outside the sample (``Yhat_unlabeled``). The
  machine error is measured on the sample and corrected for, so the estimate stays unbiased whatever
  the machine's error; how much the machine labels are trusted is PPI++'s tuned ``lambda`` (0: human
  only, 1: plain PPI).
- ``human_only``: the classical estimate from the human sample alone (ppi_py baselines).
- ``machine_only``: the machine labels on every image as if they were human (biased when the machine
  errs; its interval only reflects sampling).
- ``effective_human_labels``: the number of human-labelled units a human-only estimate would need for
  the hybrid interval's width, ``n * (width_human / width_hybrid)^2``; ``human_labels_saved`` is that
  minus the human units used.

Methods per kind of estimand (``method``):

- a frequency (share of a choice in a cell: GEP ``f_ij``, PST %F): ``"ppi-mean"``, ``ppi_mean_ci`` on
  the 0/1 indicator of the choice per question (CLT interval, power-tuned);
- a ratio of totals whose denominator differs between label sources (STS ``sum(w s) / sum(w)``; a
  frequency with ties or "Cannot identify" left out): ``"ppi-ratio-delta"``, the delta method as one
  linearisation: ``R0 = PPI mean(num) / PPI mean(den)``, then ``ppi_mean_ci`` of ``z = num - R0 den``
  and ``R = R0 + [est_z, lo_z, hi_z] / PPI mean(den)``; with units = images (each row the image's sums)
  the interval accounts for the persons / questions of one image being correlated;
- a GEP vector component ``f_0j - f_1j``: the difference of the two genders' PPI means (disjoint image
  sets, so independent): normal interval with ``se^2 = se_0^2 + se_1^2`` (``"ppi-mean-difference"``);
- the GEP score ``mean_j |v_j|`` (not smooth where a ``v_j`` is 0): ``"ppi-gep-test-inversion"``
  (:func:`metrics.core.hybrid_intervals.ppi_gep_score`): the human GEP score's test inversion applied
  to the prediction-powered signed components (issue 22: the percentile ``ppboot`` interval covered
  2.7-21% near 0 and excluded its own estimate). :func:`ppi_statistic` (``ppi_py.ppboot``, percentile)
  stays for smooth statistics; ppi_py draws from numpy's global generator: it is seeded from ``seed``
  and restored afterwards, so a report is reproducible.
- sparse cells: a frequency or vector component whose human sample has fewer than 10 present or
  absent questions falls back to the human Wilson / Newcombe interval (``"wilson-human"`` /
  ``"newcombe-human"``, :mod:`metrics.core.hybrid_intervals`): the Wald-type PPI interval is valid
  only above that (f = 0.02 with 40 human labels covered 55%).

Coverage: ``bench/ppi_coverage.py`` simulates campaigns with known truth and a machine with known,
label-dependent error (figures in bench/README.md); ``tests/metrics/core/test_hybrid.py`` asserts
>= 93% coverage in 400 seeded runs, the machine-only bias and the narrower hybrid interval.
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm

__all__ = ["BLOCK_METHODS", "METHODS", "ppi_difference", "ppi_mean", "ppi_ratio", "ppi_statistic"]

METHODS = {"frequency": "ppi-mean", "ratio": "ppi-ratio-delta", "gep.vector": "ppi-mean-difference",
           "gep.score": "ppi-gep-test-inversion"}

# The interval method of a result's `human_only` and `machine_only` blocks, by the result's `method`
# (issue 22: every figure carries its method): the classical counterpart of each hybrid method.
BLOCK_METHODS: dict[str, tuple[str, str]] = {
    "ppi-mean": ("classical-mean", "classical-mean"),
    "ppi-ratio-delta": ("classical-ratio-delta", "classical-ratio-delta"),
    "ppi-mean-difference": ("classical-mean-difference", "classical-mean-difference"),
    "ppi-gep-test-inversion": ("gep-test-inversion", "gep-test-inversion"),
    "ppboot": ("classical-bootstrap", "classical-bootstrap"),
    "wilson-human": ("wilson", "classical-mean"),
    "newcombe-human": ("newcombe", "classical-mean-difference"),
}


def _f(x: Any) -> float | None:
    if x is None:
        return None
    v = float(np.asarray(x).reshape(-1)[0]) if np.ndim(x) else float(x)
    return v if np.isfinite(v) else None


def _pair(lo: Any, hi: Any) -> list[float | None]:
    return [_f(lo), _f(hi)]


def _empty(method: str) -> dict[str, Any]:
    human_method, machine_method = BLOCK_METHODS.get(method, (method, method))
    none = {"estimate": None, "ci": [None, None], "n": 0}
    return {"estimate": None, "ci": [None, None], "method": method, "lambda": None, "n_human": 0, "n_machine": 0,
            "human_only": {**none, "method": human_method}, "machine_only": {**none, "method": machine_method},
            "effective_human_labels": None, "human_labels_saved": None}


def _saved(n: int, human_ci: Sequence[Any], hybrid_ci: Sequence[Any]) -> tuple[float | None, float | None]:
    try:
        wh = float(human_ci[1]) - float(human_ci[0])
        wp = float(hybrid_ci[1]) - float(hybrid_ci[0])
    except (TypeError, ValueError):
        return None, None
    if not (np.isfinite(wh) and np.isfinite(wp)) or wp <= 0:
        return None, None
    eff = n * (wh / wp) ** 2
    return float(eff), float(eff - n)


def _result(method: str, est: Any, ci: Sequence[Any], lam: Any, n: int, big_n: int, human: tuple[Any, Any],
            machine: tuple[Any, Any], n_machine_all: int) -> dict[str, Any]:
    eff, saved = _saved(n, human[1], ci)
    human_method, machine_method = BLOCK_METHODS.get(method, (method, method))
    return {"estimate": _f(est), "ci": _pair(*ci), "method": method, "lambda": _f(lam), "n_human": int(n),
            "n_machine": int(big_n),
            "human_only": {"estimate": _f(human[0]), "ci": _pair(*human[1]), "n": int(n), "method": human_method},
            "machine_only": {"estimate": _f(machine[0]), "ci": _pair(*machine[1]), "n": int(n_machine_all),
                             "method": machine_method},
            "effective_human_labels": eff, "human_labels_saved": saved}


def _arrays(*xs: ArrayLike) -> list[NDArray[np.float64]]:
    return [np.asarray(x, dtype=float).reshape(-1) for x in xs]


# ------------------------------------------------------------------------------- means
def ppi_mean(y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike, confidence: float = 0.95) -> dict[str, Any]:
    """PPI++ mean of ``y`` (human values of the sampled units) with the machine's values ``yhat`` on the
    same units and ``yhat_unlabeled`` on the units outside the sample (``ppi_py.ppi_mean_ci``, its
    point estimate ``ppi_mean_pointestimate``; human-only and machine-only: ``classical_mean_ci``).
    Fewer than 2 human units: no estimate. No unlabeled unit: the human-only estimate (``lambda`` 0)."""
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

    y, yh, yu = _arrays(y, yhat, yhat_unlabeled)
    if y.size != yh.size:
        raise ValueError("y and yhat must have one entry per human-labelled unit")
    n, big_n = y.size, yu.size
    if n < 2:
        return _empty(METHODS["frequency"])
    alpha = 1 - confidence
    machine_all = np.concatenate([yh, yu])
    human = (y.mean(), classical_mean_ci(y, alpha=alpha))
    machine = (machine_all.mean(), classical_mean_ci(machine_all, alpha=alpha))
    if big_n < 2:
        return _result(METHODS["frequency"], human[0], human[1], 0.0, n, big_n, human, machine, machine_all.size)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # a constant column: lambda 0/0 -> nan handled below
        est = ppi_mean_pointestimate(y, yh, yu)
        lo, hi = ppi_mean_ci(y, yh, yu, alpha=alpha)
    est, lo, hi = _f(est), _f(lo), _f(hi)
    if est is None or lo is None or hi is None:  # degenerate power tuning (every label equal): human only
        return _result(METHODS["frequency"], human[0], human[1], 0.0, n, big_n, human, machine, machine_all.size)
    shift = yu.mean() - yh.mean()
    lam = (est - y.mean()) / shift if abs(shift) > 1e-12 else None
    return _result(METHODS["frequency"], est, (lo, hi), lam, n, big_n, human, machine, machine_all.size)


def _se(ci: Sequence[Any], confidence: float) -> float:
    return (float(ci[1]) - float(ci[0])) / (2 * float(norm.ppf(1 - (1 - confidence) / 2)))


def ppi_difference(a: dict[str, Any], b: dict[str, Any], confidence: float = 0.95) -> dict[str, Any]:
    """``a - b`` of two PPI results on independent units (two genders' frequencies: a GEP vector
    component), each of its three estimates with the normal interval ``se^2 = se_a^2 + se_b^2``."""
    z = float(norm.ppf(1 - (1 - confidence) / 2))

    def diff(x: dict[str, Any], y: dict[str, Any]) -> tuple[Any, list[Any]]:
        if x["estimate"] is None or y["estimate"] is None or None in x["ci"] or None in y["ci"]:
            return None, [None, None]
        d = x["estimate"] - y["estimate"]
        se = float(np.hypot(_se(x["ci"], confidence), _se(y["ci"], confidence)))
        return d, [d - z * se, d + z * se]

    est, ci = diff(a, b)
    h = diff(a["human_only"], b["human_only"])
    m = diff(a["machine_only"], b["machine_only"])
    n = a["n_human"] + b["n_human"]
    out = _result(METHODS["gep.vector"], est, ci, None, n, a["n_machine"] + b["n_machine"], h, m,
                  a["machine_only"]["n"] + b["machine_only"]["n"])
    return out


# ------------------------------------------------------------------------------ ratios
def _classical_ratio(num: NDArray[np.float64], den: NDArray[np.float64], alpha: float
                     ) -> tuple[Any, tuple[Any, Any]]:
    from ppi_py import classical_mean_ci

    if num.size < 2 or den.sum() <= 0:
        return None, (None, None)
    r = num.sum() / den.sum()
    lo, hi = classical_mean_ci((num - r * den) / den.mean(), alpha=alpha)
    return r, (r + _f(lo), r + _f(hi))


def ppi_ratio(num: ArrayLike, den: ArrayLike, num_hat: ArrayLike, den_hat: ArrayLike, num_unlabeled: ArrayLike,
              den_unlabeled: ArrayLike, confidence: float = 0.95, scale: float = 1.0) -> dict[str, Any]:
    """PPI of a ratio of totals ``sum(num) / sum(den)`` (``scale`` times it, e.g. 100 for STS in %) by
    the delta method (module docstring). Rows are units: persons / questions, or images with their
    sums. Human-only and machine-only: the same linearisation with ``classical_mean_ci``."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    x, d, xh, dh, xu, du = _arrays(num, den, num_hat, den_hat, num_unlabeled, den_unlabeled)
    if not (x.size == d.size == xh.size == dh.size) or xu.size != du.size:
        raise ValueError("num/den arrays of one source must have one entry per unit")
    n, big_n = x.size, xu.size
    method = METHODS["ratio"]
    if n < 2 or d.sum() <= 0:
        return _empty(method)
    alpha = 1 - confidence
    human = _classical_ratio(x, d, alpha)
    machine = _classical_ratio(np.concatenate([xh, xu]), np.concatenate([dh, du]), alpha)

    def scaled(pair: tuple[Any, tuple[Any, Any]]) -> tuple[Any, tuple[Any, Any]]:
        e, (lo, hi) = pair
        return (None if e is None else scale * e,
                (None if lo is None else scale * lo, None if hi is None else scale * hi))

    if big_n < 2:
        e, ci = scaled(human)
        return _result(method, e, ci, 0.0, n, big_n, scaled(human), scaled(machine), n + big_n)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        mean_num = _f(ppi_mean_pointestimate(x, xh, xu))
        mean_den = _f(ppi_mean_pointestimate(d, dh, du))
        if mean_num is None or mean_den is None or mean_den <= 0:
            e, ci = scaled(human)
            return _result(method, e, ci, 0.0, n, big_n, scaled(human), scaled(machine), n + big_n)
        r0 = mean_num / mean_den
        z, zh, zu = x - r0 * d, xh - r0 * dh, xu - r0 * du
        est_z = _f(ppi_mean_pointestimate(z, zh, zu))
        ci_z = ppi_mean_ci(z, zh, zu, alpha=alpha)
    lo_z, hi_z = _f(ci_z[0]), _f(ci_z[1])
    if est_z is None or lo_z is None or hi_z is None:
        e, ci = scaled(human)
        return _result(method, e, ci, 0.0, n, big_n, scaled(human), scaled(machine), n + big_n)
    est = r0 + est_z / mean_den
    ci = (r0 + lo_z / mean_den, r0 + hi_z / mean_den)
    shift = zu.mean() - zh.mean()
    lam = est_z / shift - z.mean() / shift if abs(shift) > 1e-12 else None
    return _result(method, scale * est, (scale * ci[0], scale * ci[1]), lam, n, big_n, scaled(human),
                   scaled(machine), n + big_n)


# -------------------------------------------------------------------- any statistic
@contextlib.contextmanager
def _seeded(seed: int | None) -> Iterator[None]:
    """ppi_py resamples with numpy's global generator: seed it, and restore it afterwards."""
    state = np.random.get_state()
    np.random.seed(0 if seed is None else int(seed) & 0xFFFFFFFF)
    try:
        yield
    finally:
        np.random.set_state(state)


def ppi_statistic(estimator: Callable[[NDArray[np.float64]], float], rows: ArrayLike, rows_hat: ArrayLike,
                  rows_unlabeled: ArrayLike, *, n_boot: int = 1000, confidence: float = 0.95,
                  seed: int | None = 0) -> dict[str, Any]:
    """Prediction-powered bootstrap (``ppi_py.ppboot``, percentile) of ``estimator`` (rows -> float;
    rows are units, e.g. images with their per-cell sums). Human-only and machine-only:
    ``classical_bootstrap_ci`` on the human rows and on all machine rows. Seeded."""
    from ppi_py import classical_bootstrap_ci, ppboot

    y = np.asarray(rows, dtype=float)
    yh = np.asarray(rows_hat, dtype=float)
    yu = np.asarray(rows_unlabeled, dtype=float)
    n, big_n = y.shape[0], yu.shape[0]
    method = "ppboot"
    if n < 2:
        return _empty(method)
    alpha = 1 - confidence
    machine_all = np.concatenate([yh, yu]) if big_n else yh

    def safe(rows_: NDArray[np.float64]) -> float:
        value = float(estimator(rows_))
        return value if np.isfinite(value) else np.nan

    if n_boot < 1:  # point estimates only (the report's n_boot=0)
        with _seeded(seed), warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            lam0 = _ppboot_lambda(safe, y, yh, yu) if big_n >= 2 else 0.0
        est0 = lam0 * safe(yu) + safe(y) - lam0 * safe(yh) if big_n >= 2 else safe(y)
        return _result(method, est0, (None, None), lam0, n, big_n, (safe(y), (None, None)),
                       (safe(machine_all), (None, None)), machine_all.shape[0])

    with _seeded(seed), warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        human = (safe(y), classical_bootstrap_ci(safe, y, n_resamples=n_boot, alpha=alpha))
        machine = (safe(machine_all), classical_bootstrap_ci(safe, machine_all, n_resamples=n_boot, alpha=alpha))
        if big_n < 2:
            return _result(method, human[0], human[1], 0.0, n, big_n, human, machine, machine_all.shape[0])
        lam = _ppboot_lambda(safe, y, yh, yu)
        lo, hi = ppboot(safe, y, yh, yu, lam=lam, n_resamples=n_boot, alpha=alpha)
    est = lam * safe(yu) + safe(y) - lam * safe(yh)
    return _result(method, est, (lo, hi), lam, n, big_n, human, machine, machine_all.shape[0])


def _ppboot_lambda(estimator: Callable[[NDArray[np.float64]], float], y: NDArray[np.float64],
                   yh: NDArray[np.float64], yu: NDArray[np.float64], n_resamples: int = 100) -> float:
    """ppboot's own power tuning (``cov(Y, Yhat) / (var Yhat + var Yhat_unlabeled)`` over bootstrap
    draws), computed once here so the point estimate and the interval use the same ``lambda``; kept in
    [0, 1] as ``ppi_mean_ci`` does (0: human only)."""
    from ppi_py.utils import bootstrap

    draws = bootstrap([y, yh, yu], lambda a, b, c: (estimator(a), estimator(b), estimator(c)),
                      n_resamples=n_resamples, paired=[[0, 1]])
    arr = np.asarray(draws, dtype=float)
    arr = arr[np.isfinite(arr).all(axis=1)]
    if arr.shape[0] < 3:
        return 0.0
    den = np.var(arr[:, 1]) + np.var(arr[:, 2])
    lam = np.cov(arr[:, 0], arr[:, 1])[0, 1] / den if den > 0 else 0.0
    return float(np.clip(lam, 0.0, 1.0))
