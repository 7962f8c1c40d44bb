"""Machine labels held to human labels (pure: numpy, scipy, sklearn; no Django).

Two comparisons, as the papers make them:

1. **Label agreement** (PST appendix E Table 12, GEP Table 16 and Table 7): on the questions that have
   both a human majority label and a machine label, :func:`label_agreement` gives Cohen's kappa,
   accuracy, Matthews' correlation (MCC) and, where the machine gave a score, the ROC-AUC of that
   score against the human label being the ``positive`` choice; each with a 95% BCa bootstrap
   interval over images (:mod:`metrics.core.intervals`: all questions of a resampled image come
   along, acceleration from the leave-one-image-out jackknife). Point estimates are sklearn's
   (``cohen_kappa_score``, ``accuracy_score``, ``matthews_corrcoef``, ``roc_auc_score``); the
   bootstrap evaluates the same formulas vectorised over resamples (kappa, accuracy and MCC are
   functions of the confusion matrix, so a resample is its per-image confusion counts summed with
   multiplicities; the AUC is the weighted Mann-Whitney statistic, ties counted half, which is what
   ``roc_auc_score`` computes), and the tests hold the two equal. :func:`agreement_by_group` runs it
   per group (e.g. GEP attribute, Table 16) on one shared set of resamples, so the mean ROC-AUC over
   groups (Table 7) gets its own interval.

2. **Vector / score comparison** (GEP section 6, Tables 4, 6, 19): :func:`vector_agreement` compares
   a machine GEP vector (or list of scores) with the human one: Kendall's tau-b (scipy
   ``kendalltau(variant="b")``, Appendix D: "we use Kendall's tau-b"), MCC of the signs with 0 as
   threshold (footnote 9 and Appendix D: "transforming non-negative values to 1 and negative values
   to -1"; sklearn ``matthews_corrcoef``) and Pearson's r (scipy ``pearsonr``, Table 19). Pairs with
   a missing value on either side are dropped; ``n`` says how many were used.

A label is missing when it is ``None``, NaN or ``""``; ``tie`` (a tied human majority) is left out too.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, encode, missing_mask
from .intervals import bca_endpoints, stratified_cluster_draws

__all__ = ["AGREEMENT_STATS", "agreement_by_group", "label_agreement", "vector_agreement"]

AGREEMENT_STATS = ("cohen_kappa", "accuracy", "mcc")
_LEFT_OUT = {"tie"}


def _f(x: Any) -> float | None:
    if x is None:
        return None
    v = float(x)
    return None if not np.isfinite(v) else v


# ------------------------------------------------------------------ confusion statistics
def _confusion_stats(cm: NDArray[np.float64]) -> NDArray[np.float64]:
    """(B, k, k) confusion totals (rows: human, columns: machine) -> (B, 3) kappa, accuracy, MCC, as
    sklearn's formulas (MCC 0 where its denominator is 0; kappa NaN where its is)."""
    total = cm.sum(axis=(1, 2))
    diag = np.trace(cm, axis1=1, axis2=2)
    t = cm.sum(axis=2)  # human marginals (true)
    p = cm.sum(axis=1)  # machine marginals (predicted)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = diag / total
        expected = (t * p).sum(axis=1) / total
        # sklearn: kappa = 1 - sum(w * cm) / sum(w * expected) with w = 1 - I (counts, not shares)
        observed_dis = total - diag
        expected_dis = total - expected
        kappa = np.where(expected_dis != 0, 1 - observed_dis / expected_dis, np.nan)
        cov_ytyp = diag * total - (t * p).sum(axis=1)
        cov_ypyp = total ** 2 - (p * p).sum(axis=1)
        cov_ytyt = total ** 2 - (t * t).sum(axis=1)
        den = cov_ytyt * cov_ypyp
        mcc = np.where(den > 0, cov_ytyp / np.sqrt(np.where(den > 0, den, 1.0)), 0.0)
    return np.stack([kappa, acc, mcc], axis=1)


def _weighted_auc(y: NDArray[np.bool_], s: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    """ROC-AUC of score ``s`` for ``y`` with row weights ``w`` (B, n): the weighted Mann-Whitney
    statistic, ties half (what roc_auc_score computes); NaN where one class has no weight."""
    order = np.argsort(s, kind="stable")
    s_sorted, y_sorted = s[order], y[order]
    w_sorted = w[:, order]
    # first and last sorted position of each row's tie group
    _, start, counts = np.unique(s_sorted, return_index=True, return_counts=True)
    group = np.repeat(np.arange(start.size), counts)
    first, last = start[group], start[group] + counts[group] - 1
    neg = w_sorted * (~y_sorted)
    cum = np.cumsum(neg, axis=1)
    below = np.where(first > 0, cum[:, np.maximum(first - 1, 0)], 0.0)
    equal = cum[:, last] - below
    pos = w_sorted * y_sorted
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (pos * (below + 0.5 * equal)).sum(axis=1) / (pos.sum(axis=1) * neg.sum(axis=1))
    return np.where((pos.sum(axis=1) > 0) & (neg.sum(axis=1) > 0), auc, np.nan)


# ------------------------------------------------------------------------- preparation
def _usable(human: NDArray[Any], machine: NDArray[Any]) -> NDArray[np.bool_]:
    left_out = np.isin(np.char.lower(human.astype(str)), list(_LEFT_OUT))
    return ~missing_mask(human) & ~missing_mask(machine) & ~left_out


def _ci_dict(name: str, estimate: Any, low: Any, high: Any) -> dict[str, Any]:
    """A figure, its interval and the interval's method (every interval here: BCa over images)."""
    return {name: _f(estimate), f"{name}_ci": [_f(low), _f(high)], f"{name}_ci_method": "bca-cluster"}


class _Resamples:
    """One set of image resamples (multiplicities, (B, n_images)) and the leave-one-image-out weights,
    shared by every statistic of a comparison so group means get consistent draws."""

    def __init__(self, image_ids: NDArray[Any], n_boot: int, seed: int | None):
        self.codes, ids = encode(image_ids)
        self.n = len(ids)
        self.n_boot = n_boot
        self.seed = seed
        if n_boot > 0 and self.n:
            # Resampling the identity matrix gives each image's multiplicity per draw (the same draws
            # as stratified_cluster_draws gives any per-image column sums).
            self.mult = stratified_cluster_draws(np.eye(self.n), None, n_boot, seed)[:, 0, :]
        else:
            self.mult = np.zeros((0, self.n))


def _loo(n: int) -> NDArray[np.float64]:
    """Leave-one-image-out weights: row i leaves image i out."""
    return 1.0 - np.eye(n)


def _confusion_ci(rows: NDArray[np.bool_], h: NDArray[np.intp], m: NDArray[np.intp], k: int, res: _Resamples,
                  confidence: float) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Bootstrap + jackknife of the three confusion statistics over the rows selected."""
    img = res.codes[rows]
    cell = h[rows] * k + m[rows]
    per_image = np.zeros((res.n, k * k))
    np.add.at(per_image, (img, cell), 1.0)
    est = _confusion_stats(per_image.sum(axis=0).reshape(1, k, k))[0]
    if res.n_boot == 0:
        return est, np.full(3, np.nan), np.full(3, np.nan)
    used = np.unique(img)
    draws = _confusion_stats((res.mult @ per_image).reshape(-1, k, k))
    jack = _confusion_stats((_loo(used.size) @ per_image[used]).reshape(-1, k, k))
    lo, hi, _ = bca_endpoints(est, draws, jack, confidence)
    return est, lo, hi


def _auc_draws(rows: NDArray[np.bool_], y: NDArray[np.bool_], s: NDArray[np.float64], res: _Resamples
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    img = res.codes[rows]
    draws = _weighted_auc(y[rows], s[rows], res.mult[:, img]) if res.n_boot else np.zeros(0)
    used = np.unique(img)
    jack = _weighted_auc(y[rows], s[rows], _loo(used.size)[:, np.searchsorted(used, img)])
    return draws, jack


def _one(rows: NDArray[np.bool_], h: NDArray[np.intp], m: NDArray[np.intp], k: int, y: NDArray[np.bool_] | None,
         s: NDArray[np.float64] | None, res: _Resamples, confidence: float,
         h_labels: NDArray[Any], m_labels: NDArray[Any]) -> tuple[dict[str, Any], Any]:
    from sklearn.metrics import accuracy_score, cohen_kappa_score, matthews_corrcoef, roc_auc_score

    n = int(rows.sum())
    out: dict[str, Any] = {"n": n, "n_images": int(np.unique(res.codes[rows]).size)}
    auc_parts = None
    if n == 0:
        for name in (*AGREEMENT_STATS, "roc_auc"):
            out.update(_ci_dict(name, None, None, None))
        return out, None
    hl, ml = h_labels[rows].astype(str), m_labels[rows].astype(str)
    with warnings.catch_warnings():  # one label on both sides: sklearn warns and returns NaN
        warnings.simplefilter("ignore")
        point = {"cohen_kappa": cohen_kappa_score(hl, ml), "accuracy": accuracy_score(hl, ml),
                 "mcc": matthews_corrcoef(hl, ml)}
        _, lo, hi = _confusion_ci(rows, h, m, k, res, confidence)
    for i, name in enumerate(AGREEMENT_STATS):
        # intervals hold the estimate (BCa can put an endpoint past it only in a degenerate bootstrap)
        est = point[name]
        low, high = (min(lo[i], est), max(hi[i], est)) if np.isfinite(lo[i]) and np.isfinite(est) else (lo[i], hi[i])
        out.update(_ci_dict(name, est, low, high))
    if y is not None and s is not None and np.isfinite(s[rows]).all():
        yr = y[rows]
        if yr.any() and (~yr).any():
            est = float(roc_auc_score(yr, s[rows]))
            draws, jack = _auc_draws(rows, y, s, res)
            auc_parts = (est, draws, jack)
            if res.n_boot:
                with warnings.catch_warnings():  # a jackknife over one image: nothing to average
                    warnings.simplefilter("ignore", RuntimeWarning)
                    lo_a, hi_a, _ = bca_endpoints(est, draws, jack, confidence)
                out.update(_ci_dict("roc_auc", est, min(lo_a[0], est), max(hi_a[0], est)))
            else:
                out.update(_ci_dict("roc_auc", est, None, None))
        else:
            out.update(_ci_dict("roc_auc", None, None, None))
    else:
        out.update(_ci_dict("roc_auc", None, None, None))
    return out, auc_parts


def _prepare(human: ArrayLike, machine: ArrayLike, image_ids: ArrayLike, score: ArrayLike | None,
             positive: str | None) -> tuple[Any, ...]:
    h = as_1d(human, "human").astype(object)
    m = as_1d(machine, "machine").astype(object)
    imgs = as_1d(image_ids, "image_ids")
    if not (h.size == m.size == imgs.size):
        raise ValueError("human, machine and image_ids must have one entry per question")
    ok = _usable(h, m)
    labels = sorted(set(h[ok].astype(str).tolist()) | set(m[ok].astype(str).tolist()))
    lookup = {lab: i for i, lab in enumerate(labels)}
    hc = np.array([lookup.get(str(x), -1) for x in h], dtype=np.intp)
    mc = np.array([lookup.get(str(x), -1) for x in m], dtype=np.intp)
    y = s = None
    if score is not None and positive is not None:
        s = np.asarray(score, dtype=float)
        if s.shape != h.shape:
            raise ValueError("score must have one entry per question")
        y = np.char.lower(h.astype(str)) == str(positive).lower()
    return h, m, imgs, ok, hc, mc, max(1, len(labels)), y, s


def label_agreement(human: ArrayLike, machine: ArrayLike, image_ids: ArrayLike, *, score: ArrayLike | None = None,
                    positive: str | None = None, n_boot: int = 1000, confidence: float = 0.95,
                    seed: int | None = 0) -> dict[str, Any]:
    """Agreement of a machine labeller with the human majority on the questions that have both.

    ``human`` / ``machine``: one label per question (missing: None / NaN / ""; "tie" left out);
    ``image_ids``: the question's image (the resampling unit); ``score`` (optional, NaN where none):
    the machine's score in [0, 1] for the ``positive`` choice (GEP: "yes", the attribute is present).
    Returns ``{n, n_images, cohen_kappa, cohen_kappa_ci, accuracy, accuracy_ci, mcc, mcc_ci, roc_auc,
    roc_auc_ci, method, n_boot, seed, confidence}``; ``roc_auc`` is None without scores on every used
    question or with one human class only. ``n_boot=0``: no intervals."""
    h, m, imgs, ok, hc, mc, k, y, s = _prepare(human, machine, image_ids, score, positive)
    res = _Resamples(imgs[ok], n_boot, seed)
    rows = np.ones(int(ok.sum()), dtype=bool)
    out, _ = _one(rows, hc[ok], mc[ok], k, None if y is None else y[ok], None if s is None else s[ok], res,
                  confidence, h[ok], m[ok])
    return {**out, "method": "bca-cluster", "n_boot": n_boot, "seed": seed, "confidence": confidence}


def agreement_by_group(human: ArrayLike, machine: ArrayLike, image_ids: ArrayLike, groups: ArrayLike, *,
                       score: ArrayLike | None = None, positive: str | None = None, n_boot: int = 1000,
                       confidence: float = 0.95, seed: int | None = 0) -> dict[str, Any]:
    """:func:`label_agreement` overall and per group (e.g. GEP attribute: Table 16) on one shared set
    of image resamples, plus ``roc_auc_mean``: the mean of the groups' ROC-AUCs (GEP Table 7) with its
    interval (BCa of the per-draw mean over the groups that have an AUC).
    Returns ``{"overall": {...}, "groups": {group: {...}}, "roc_auc_mean", "roc_auc_mean_ci",
    "roc_auc_groups"}``."""
    h, m, imgs, ok, hc, mc, k, y, s = _prepare(human, machine, image_ids, score, positive)
    g = as_1d(groups, "groups").astype(str)
    if g.size != h.size:
        raise ValueError("groups must have one entry per question")
    res = _Resamples(imgs[ok], n_boot, seed)
    hc, mc, g, hl, ml = hc[ok], mc[ok], g[ok], h[ok], m[ok]
    yv = None if y is None else y[ok]
    sv = None if s is None else s[ok]
    overall, _ = _one(np.ones(hc.size, dtype=bool), hc, mc, k, yv, sv, res, confidence, hl, ml)
    per: dict[str, Any] = {}
    aucs: list[tuple[float, NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]] = []
    for name in sorted(set(g.tolist())):
        rows = g == name
        per[name], parts = _one(rows, hc, mc, k, yv, sv, res, confidence, hl, ml)
        if parts is not None:
            aucs.append((*parts, rows))
    out: dict[str, Any] = {"overall": overall, "groups": per, "roc_auc_groups": len(aucs),
                           "method": "bca-cluster", "n_boot": n_boot, "seed": seed, "confidence": confidence}
    out.update(_ci_dict("roc_auc_mean", None, None, None))
    if aucs:
        est = float(np.mean([a[0] for a in aucs]))
        if res.n_boot:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                draws = np.nanmean(np.stack([a[1] for a in aucs], axis=1), axis=1)
            # jackknife of the mean: leave one image out of every group at once
            used = np.unique(res.codes)
            jack = np.zeros(used.size)
            for a_est, _, a_jack, rows in aucs:
                imgs_g = np.unique(res.codes[rows])
                full = np.full(used.size, a_est)  # an image outside the group leaves its AUC as it is
                full[np.searchsorted(used, imgs_g)] = a_jack
                jack += full
            jack /= len(aucs)
            lo, hi, _ = bca_endpoints(est, draws, jack, confidence)
            out.update(_ci_dict("roc_auc_mean", est, min(lo[0], est), max(hi[0], est)))
        else:
            out.update(_ci_dict("roc_auc_mean", est, None, None))
    return out


# ------------------------------------------------------------------ vectors and scores
def vector_agreement(machine: ArrayLike | dict[str, Any], human: ArrayLike | dict[str, Any],
                     keys: Sequence[str] | None = None) -> dict[str, Any]:
    """Machine vs human GEP vector (or scores across settings / campaigns, GEP Table 6): Kendall's
    tau-b, MCC of signs (>= 0 -> 1, < 0 -> -1), Pearson's r, and ``n`` pairs used. Dicts are matched
    by key (``keys``: which, in order; default the keys both have). Fewer than 2 pairs, or a constant
    side, gives None for the statistic that cannot be computed."""
    from scipy import stats
    from sklearn.metrics import matthews_corrcoef

    if isinstance(machine, dict) or isinstance(human, dict):
        if not (isinstance(machine, dict) and isinstance(human, dict)):
            raise ValueError("give both vectors as dicts or both as arrays")
        names = list(keys) if keys is not None else [k for k in human if k in machine]
        a = np.array([np.nan if machine.get(n) is None else float(machine[n]) for n in names])
        b = np.array([np.nan if human.get(n) is None else float(human[n]) for n in names])
    else:
        a = np.asarray(machine, dtype=float)
        b = np.asarray(human, dtype=float)
        if a.shape != b.shape or a.ndim != 1:
            raise ValueError("machine and human must be 1-D of one length")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    out: dict[str, Any] = {"n": int(a.size), "kendall_tau_b": None, "kendall_tau_b_p": None, "mcc": None,
                           "pearson": None, "pearson_p": None}
    if a.size < 2:
        return out
    with warnings.catch_warnings():  # a constant side: scipy warns and returns NaN
        warnings.simplefilter("ignore")
        tau = stats.kendalltau(a, b, variant="b")
        out["kendall_tau_b"], out["kendall_tau_b_p"] = _f(tau.statistic), _f(tau.pvalue)
        if np.ptp(a) > 0 and np.ptp(b) > 0:
            r = stats.pearsonr(a, b)
            out["pearson"], out["pearson_p"] = _f(r.statistic), _f(r.pvalue)
        out["mcc"] = _f(matthews_corrcoef(np.where(b >= 0, 1, -1), np.where(a >= 0, 1, -1)))
    return out

