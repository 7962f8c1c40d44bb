"""Agreement over subsets and over several campaigns: per GEP attribute, per PST identity,
Krippendorff's alpha pooled over the campaigns of a comparison (the GEP paper reports 0.81
pooled over its three models), with a bootstrap interval for alpha.

Inputs are questions x choices count matrices (``counts[i, c]`` = answers of question i in
choice c, the layout of :func:`metrics.core.agreement.fleiss_kappa_from_counts` and of the
report's ``vote_counts()``). Questions with no answer are ignored; missing answers simply
lower a question's count (alpha allows them; Fleiss uses the questions with the modal
number of answers, see :mod:`metrics.core.agreement`). The values are those of the
existing functions (Fleiss' kappa, the ``krippendorff`` package, percent agreement), computed
on the subset.

Pooled alpha is alpha on the union of the campaigns' questions (their count matrices
stacked; the choice columns must mean the same in every campaign). It is not the mean of
the campaigns' alphas: the expected disagreement is pooled too, so campaigns with different
label distributions give a pooled alpha above their mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, encode, row_totals
from .agreement import fleiss_kappa_from_counts, krippendorff_alpha_from_counts, percent_agreement_from_counts
from .intervals import CI, stratified_cluster_bca
from .resampling import pattern_cluster_bca

__all__ = [
    "agreement_summary",
    "agreement_by_group",
    "pooled_alpha",
    "alpha_from_coincidences",
    "coincidence_total",
    "alpha_interval",
]


def agreement_summary(counts: ArrayLike) -> dict[str, Any]:
    """Fleiss' kappa, Krippendorff's alpha (nominal), percent agreement and the numbers of
    questions / answers for one count matrix (rows without answers dropped); the same keys
    as the report's agreement section."""
    c = np.asarray(counts, dtype=np.int64)
    c = c[row_totals(c) > 0] if c.ndim == 2 else c.reshape(0, 0)
    if c.size == 0:
        return {"fleiss_kappa": None, "fleiss_items_used": 0, "fleiss_raters_per_item": 0,
                "krippendorff_alpha": None, "percent_agreement": None, "questions": 0, "answers": 0,
                "note": "no answered question"}
    f = fleiss_kappa_from_counts(c)
    a = krippendorff_alpha_from_counts(c)

    def num(x: float) -> float | None:
        return None if not np.isfinite(x) else float(x)

    return {
        "fleiss_kappa": num(f.kappa), "fleiss_items_used": f.items_used, "fleiss_raters_per_item": f.raters_per_item,
        "krippendorff_alpha": num(a.alpha), "percent_agreement": num(percent_agreement_from_counts(c)),
        "questions": int(c.shape[0]), "answers": int(c.sum()), "note": f.reason or a.reason,
    }


def agreement_by_group(counts: ArrayLike, groups: ArrayLike) -> dict[str, dict[str, Any]]:
    """:func:`agreement_summary` per group of questions (``groups[i]`` for row i: the
    attribute of a GEP question, the identity of a PST person question, a setting, ...)."""
    c = np.asarray(counts, dtype=np.int64)
    g = as_1d(groups, "groups")
    if g.shape[0] != c.shape[0]:
        raise ValueError("groups must have one entry per question (row of counts)")
    codes, names = encode(g.astype(str))
    return {str(n): agreement_summary(c[codes == i]) for i, n in enumerate(names.tolist())}


def pooled_alpha(counts_by_campaign: Mapping[str, ArrayLike]) -> dict[str, Any]:
    """Krippendorff's alpha pooled over campaigns (their questions stacked) and per
    campaign. Every matrix must have the same choice columns in the same order
    (``ValueError`` otherwise). Returns ``{"pooled": AlphaResult.as_dict(),
    "by_campaign": {name: AlphaResult.as_dict()}, "mean_of_campaigns": float}``."""
    mats = {k: np.asarray(v, dtype=np.int64) for k, v in counts_by_campaign.items()}
    widths = {m.shape[1] for m in mats.values() if m.ndim == 2}
    if len(widths) != 1 or any(m.ndim != 2 for m in mats.values()):
        raise ValueError("every campaign needs a questions x choices matrix with the same choices")
    by = {k: krippendorff_alpha_from_counts(m[m.sum(axis=1) > 0]) for k, m in mats.items()}
    stacked = np.concatenate([m[m.sum(axis=1) > 0] for m in mats.values()])
    pooled = krippendorff_alpha_from_counts(stacked)
    finite = [r.alpha for r in by.values() if np.isfinite(r.alpha)]
    return {"pooled": pooled.as_dict(), "by_campaign": {k: r.as_dict() for k, r in by.items()},
            "mean_of_campaigns": float(np.mean(finite)) if finite else float("nan")}


def _coincidence_rows(counts: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per question, its contribution to the coincidence matrix, flattened (k*k):
    ``o_ck += n_c (n_k - [c = k]) / (m - 1)`` for questions with m >= 2 answers."""
    c = counts.astype(float)
    m = row_totals(c)
    k = c.shape[1]
    out = np.zeros((c.shape[0], k * k))
    ok = m >= 2
    if ok.any():  # only the questions that count (each value as before: x - 0.0 off the diagonal, then / (m - 1))
        co = c[ok]
        pair = co[:, :, None] * co[:, None, :]
        pair[:, np.arange(k), np.arange(k)] -= co
        pair /= (m[ok] - 1)[:, None, None]
        out[ok] = pair.reshape(co.shape[0], k * k)
    return out


def coincidence_total(counts: ArrayLike) -> NDArray[np.float64]:
    """The coincidence matrix (flattened, k*k) of a questions x choices count matrix: the sum of
    :func:`_coincidence_rows` as one product, ``(c / (m - 1))^T c - diag(sum c / (m - 1))`` over the
    questions with m >= 2 answers (equal up to float rounding; no per-question rows)."""
    c = np.asarray(counts, dtype=float)
    m = row_totals(c)
    k = c.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(m >= 2, 1.0 / np.where(m >= 2, m - 1, 1), 0.0)
    cw = c * w[:, None]
    o = cw.T @ c
    o[np.arange(k), np.arange(k)] -= cw.sum(axis=0)
    return o.reshape(k * k)


def alpha_from_coincidences(o: ArrayLike) -> NDArray[np.float64]:
    """Nominal alpha from coincidence matrices (..., k*k) (Krippendorff 2011):
    ``alpha = 1 - (n - 1) sum_{c != k} o_ck / sum_{c != k} n_c n_k``, ``n_c = sum_k o_ck``."""
    arr = np.asarray(o, dtype=float)
    k = int(round(np.sqrt(arr.shape[-1])))
    mat = arr.reshape(*arr.shape[:-1], k, k)
    n_c = mat.sum(axis=-1)
    n = n_c.sum(axis=-1)
    off = mat.sum(axis=(-1, -2)) - np.trace(mat, axis1=-2, axis2=-1)
    exp = n ** 2 - (n_c ** 2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - (n - 1) * off / exp


def alpha_interval(counts: ArrayLike, cluster_ids: ArrayLike | None = None, n_boot: int = 2000,
                   confidence: float = 0.95, seed: int | None = 0, by_pattern: bool = False) -> CI:
    """Krippendorff's alpha (nominal) with a BCa interval (``"bca-cluster"``) resampling
    questions, or clusters of questions (``cluster_ids``, e.g. the image of each GEP
    question: the 15 questions of one image are not independent). Alpha is a function of
    the coincidence matrix, a sum over questions, so every draw is one matrix product
    (:func:`metrics.core.intervals.stratified_cluster_bca`). The estimate equals the
    ``krippendorff`` package's value (tested). ``by_pattern``: the draws of
    :func:`metrics.core.resampling.pattern_cluster_bca` (same distribution, one variate per distinct
    image instead of one per image; other draws for the same seed)."""
    c = np.asarray(counts, dtype=np.int64)
    rows = _coincidence_rows(c)
    if cluster_ids is None:
        sums = rows
    else:
        codes, ids = encode(as_1d(cluster_ids, "cluster_ids"))
        # Per cluster, per column: the rows added in their order (np.add.at's sums, one bincount per column).
        sums = np.stack([np.bincount(codes, weights=rows[:, j], minlength=len(ids)) for j in range(rows.shape[1])],
                        axis=1) if rows.shape[1] else np.zeros((len(ids), 0))
    sums = sums[np.any(sums != 0, axis=1)]
    if sums.shape[0] == 0:
        nan = float("nan")
        return CI(nan, nan, nan, confidence, "bca-cluster", 0, n_boot, seed)
    if by_pattern:
        return pattern_cluster_bca(sums, lambda t: alpha_from_coincidences(t[:, 0, :]),
                                   np.zeros(sums.shape[0], dtype=np.intp), n_boot, confidence, seed)
    res = stratified_cluster_bca(sums, lambda t: alpha_from_coincidences(t[:, 0, :]), None, n_boot, confidence, seed)
    assert isinstance(res, CI)
    return res
