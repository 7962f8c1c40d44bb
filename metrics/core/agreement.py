"""Inter-annotator agreement: Fleiss' kappa, Krippendorff's alpha, Cohen's kappa,
percent agreement.

Inputs are long-format numpy arrays, one row per answer. A label that is ``None``,
NaN or ``""`` is *missing* and is dropped before anything is counted (it is not a
rating). Labels such as "Cannot identify" are ordinary categories here: agreement is
about whether raters chose the same answer, whatever it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, count_matrix, encode, missing_mask, row_totals

__all__ = [
    "first_answers",
    "FleissResult",
    "AlphaResult",
    "fleiss_kappa",
    "fleiss_kappa_from_counts",
    "krippendorff_alpha",
    "krippendorff_alpha_from_counts",
    "reliability_matrix",
    "cohen_kappa",
    "percent_agreement",
    "percent_agreement_from_counts",
]


@dataclass(frozen=True)
class FleissResult:
    """Fleiss' kappa and the items it was computed over.

    ``reason`` is ``None`` when ``kappa`` is a number, else a short explanation of
    why it is NaN.
    """

    kappa: float
    items_used: int
    items_total: int
    raters_per_item: int
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kappa": self.kappa,
            "items_used": self.items_used,
            "items_total": self.items_total,
            "raters_per_item": self.raters_per_item,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha (nominal).

    ``items_pairable``: items with at least 2 ratings (the only ones alpha uses);
    ``values_pairable``: the number of ratings on those items. ``reason`` explains a
    NaN alpha.
    """

    alpha: float
    items_pairable: int
    items_total: int
    values_pairable: int
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "items_pairable": self.items_pairable,
            "items_total": self.items_total,
            "values_pairable": self.values_pairable,
            "reason": self.reason,
        }


# --------------------------------------------------------------------------- Fleiss


def _modal_total(totals: NDArray[np.int64]) -> int:
    """Most common number of ratings among items with >= 2 ratings (ties -> the larger)."""
    eligible = totals[totals >= 2]
    if eligible.size == 0:
        return 0
    freq = np.bincount(eligible)
    best = freq.max()
    return int(np.flatnonzero(freq == best).max())


def fleiss_kappa_from_counts(counts: ArrayLike) -> FleissResult:
    """Fleiss' kappa from an items x categories count matrix.

    Formula (Fleiss 1971), over the N qualifying items each rated by n raters:
    ``p_j = sum_i n_ij / (N n)``; ``P_i = (sum_j n_ij^2 - n) / (n (n - 1))``;
    ``P_bar = mean_i P_i``; ``P_e = sum_j p_j^2``;
    ``kappa = (P_bar - P_e) / (1 - P_e)``.

    Which items qualify: Fleiss' kappa needs a constant number of ratings per item,
    so only items whose row total equals the *modal* row total (the most common
    number of ratings among items with at least 2 ratings; on a tie between two
    totals the larger one is used) are kept. ``items_used`` / ``items_total`` report
    how many qualified. Missing ratings simply lower an item's total, so an item
    with a missing rating drops out when the modal total is higher.

    Returns NaN (with ``reason``) when no item has 2 or more ratings, or when every
    rating of the qualifying items falls in one category (``P_e == 1``: chance
    agreement is already perfect, kappa is undefined).
    """
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 2:
        raise ValueError("counts must be a 2-D items x categories matrix")
    if (c < 0).any():
        raise ValueError("counts must be non-negative")
    totals = row_totals(c)
    n_total = int(c.shape[0])
    n = _modal_total(totals)
    if n < 2:
        return FleissResult(float("nan"), 0, n_total, n, "no item has 2 or more ratings")
    used = c[totals == n]
    n_items = used.shape[0]
    p_j = used.sum(axis=0) / (n_items * n)
    p_i = (row_totals(used * used) - n) / (n * (n - 1))
    p_bar = float(p_i.mean())
    p_e = float((p_j * p_j).sum())
    if np.isclose(p_e, 1.0):
        return FleissResult(
            float("nan"), n_items, n_total, n, "all ratings in one category (P_e = 1)"
        )
    return FleissResult((p_bar - p_e) / (1.0 - p_e), n_items, n_total, n)


def fleiss_kappa(
    items: ArrayLike,
    labels: ArrayLike,
    n_categories: int | None = None,
    categories: Sequence[Any] | None = None,
) -> FleissResult:
    """Fleiss' kappa from long-format ratings (one row per answer).

    Builds the items x categories count matrix (missing labels dropped) and calls
    :func:`fleiss_kappa_from_counts`; see there for the formula and for which items
    qualify (those with the modal number of ratings). ``categories`` fixes the
    category set/order; ``n_categories`` only pads the matrix with empty columns
    (kappa does not change with never-used categories, so it is accepted for
    interface compatibility and checked for consistency).
    """
    cm = count_matrix(items, labels, categories)
    counts = cm.counts
    if n_categories is not None:
        if n_categories < counts.shape[1]:
            raise ValueError(
                f"n_categories={n_categories} but {counts.shape[1]} distinct labels were seen"
            )
        pad = n_categories - counts.shape[1]
        if pad:
            counts = np.hstack([counts, np.zeros((counts.shape[0], pad), dtype=np.int64)])
    return fleiss_kappa_from_counts(counts)


# --------------------------------------------------------------------- Krippendorff


def reliability_matrix(
    items: ArrayLike,
    annotators: ArrayLike,
    labels: ArrayLike,
    categories: Sequence[Any] | None = None,
) -> tuple[NDArray[np.float64], NDArray[Any], NDArray[Any], NDArray[Any]]:
    """Annotators x items matrix of category codes, ``np.nan`` where missing.

    Returns ``(matrix, annotator_ids, item_ids, categories)``; ``matrix[a, i]`` is the
    code (index into ``categories``) of annotator a's label for item i. If an
    annotator answered the same item more than once a ``ValueError`` is raised
    (the matrix can hold only one value per cell).
    """
    items_a = as_1d(items, "items")
    ann_a = as_1d(annotators, "annotators")
    labels_a = as_1d(labels, "labels")
    if not (items_a.shape == ann_a.shape == labels_a.shape):
        raise ValueError("items, annotators and labels must have the same length")
    keep = ~missing_mask(labels_a)
    items_a, ann_a, labels_a = items_a[keep], ann_a[keep], labels_a[keep]
    i_codes, item_ids = encode(items_a)
    a_codes, ann_ids = encode(ann_a)
    l_codes, cats = encode(labels_a, categories)
    cell = a_codes * len(item_ids) + i_codes
    if np.unique(cell).size != cell.size:
        raise ValueError("an annotator rated the same item more than once")
    mat = np.full((len(ann_ids), len(item_ids)), np.nan)
    mat[a_codes, i_codes] = l_codes
    return mat, ann_ids, item_ids, cats


def krippendorff_alpha(
    items: ArrayLike,
    annotators: ArrayLike,
    labels: ArrayLike,
    method: Literal["value_counts", "reliability_data"] = "value_counts",
) -> AlphaResult:
    """Krippendorff's alpha, nominal level, computed by the ``krippendorff`` package.

    ``alpha = 1 - D_o / D_e`` where, over the coincidence matrix of all pairable
    values (values on items with at least 2 ratings), ``D_o`` is the observed and
    ``D_e`` the expected share of disagreeing value pairs (Krippendorff 2011).
    Missing ratings are allowed: an item simply contributes the pairs among the
    ratings it has; items with fewer than 2 ratings are unpairable and ignored.

    ``method="value_counts"`` (default) passes the items x categories count matrix
    to ``krippendorff.alpha(value_counts=...)``; for nominal data alpha depends only
    on these counts, and this is far cheaper than a reliability matrix with one
    row per annotator on large crowdsourced data. ``method="reliability_data"``
    builds the annotators x items matrix (:func:`reliability_matrix`) and passes
    that; both give the same value (tested).

    Degenerate input returns ``alpha = nan`` with a ``reason`` instead of raising:
    no item with 2 or more ratings; or all pairable ratings in a single category
    (expected disagreement 0, alpha undefined).
    """
    items_a = as_1d(items, "items")
    labels_a = as_1d(labels, "labels")
    cm = count_matrix(items_a, labels_a)
    if method == "value_counts":
        return krippendorff_alpha_from_counts(cm.counts)
    if method != "reliability_data":
        raise ValueError(f"unknown method {method!r}")
    import krippendorff  # local import: keep module import cheap

    degenerate = _alpha_degenerate(cm.counts)
    if degenerate is not None:
        return degenerate
    pairable = row_totals(cm.counts) >= 2
    mat, _, _, cats = reliability_matrix(items_a, annotators, labels_a)
    alpha = krippendorff.alpha(
        reliability_data=mat,
        value_domain=np.arange(len(cats), dtype=float),
        level_of_measurement="nominal",
    )
    return AlphaResult(float(alpha), int(pairable.sum()), int(cm.counts.shape[0]), int(cm.counts[pairable].sum()))


def _alpha_degenerate(counts: NDArray[np.int64]) -> AlphaResult | None:
    totals = row_totals(counts)
    pairable = totals >= 2
    vc = counts[pairable]
    n_items, n_values = int(counts.shape[0]), int(vc.sum())
    if vc.shape[0] == 0:
        return AlphaResult(float("nan"), 0, n_items, 0, "no item has 2 or more ratings")
    if int((vc.sum(axis=0) > 0).sum()) < 2:
        return AlphaResult(float("nan"), int(vc.shape[0]), n_items, n_values,
                           "all pairable ratings in a single category (expected disagreement is 0)")
    return None


def krippendorff_alpha_from_counts(counts: ArrayLike) -> AlphaResult:
    """Krippendorff's alpha (nominal) from an items x categories count matrix, computed by the
    ``krippendorff`` package (``value_counts=``); see :func:`krippendorff_alpha` for the formula,
    missing ratings and degenerate input. For nominal data alpha depends only on these counts."""
    import krippendorff  # local import: keep module import cheap

    c = np.asarray(counts, dtype=np.int64)
    degenerate = _alpha_degenerate(c)
    if degenerate is not None:
        return degenerate
    pairable = row_totals(c) >= 2
    vc = c[pairable]
    alpha = krippendorff.alpha(value_counts=vc, level_of_measurement="nominal")
    return AlphaResult(float(alpha), int(vc.shape[0]), int(c.shape[0]), int(vc.sum()))


# ---------------------------------------------------------------------------- Cohen


def cohen_kappa(a: ArrayLike, b: ArrayLike) -> float:
    """Cohen's kappa between two aligned label sources (e.g. classifier vs majority).

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of positions where
    ``a == b`` and ``p_e = sum_c pa_c * pb_c`` from the two marginal distributions
    over the union of categories. Positions where either label is missing are
    dropped. A "tie" or "Cannot identify" label is an ordinary category. Returns
    NaN when nothing is left, or when ``p_e == 1`` (both sources constant and
    equal, so kappa is undefined).
    """
    a_arr, b_arr = as_1d(a, "a"), as_1d(b, "b")
    if a_arr.shape != b_arr.shape:
        raise ValueError("a and b must be aligned (same length)")
    keep = ~(missing_mask(a_arr) | missing_mask(b_arr))
    a_arr, b_arr = a_arr[keep], b_arr[keep]
    n = a_arr.size
    if n == 0:
        return float("nan")
    codes, _ = encode(np.concatenate([a_arr.astype(object), b_arr.astype(object)]))
    ca, cb = codes[:n], codes[n:]
    k = int(codes.max()) + 1
    p_o = float(np.mean(ca == cb))
    pa = np.bincount(ca, minlength=k) / n
    pb = np.bincount(cb, minlength=k) / n
    p_e = float(pa @ pb)
    if np.isclose(p_e, 1.0):
        return float("nan")
    return (p_o - p_e) / (1.0 - p_e)


# ------------------------------------------------------------------ percent agreement


def percent_agreement_from_counts(counts: ArrayLike) -> float:
    """Mean pairwise agreement from an items x categories count matrix.

    For each item with ``n_i >= 2`` ratings: ``A_i = sum_j n_ij (n_ij - 1) /
    (n_i (n_i - 1))``, the share of ordered rater pairs that chose the same
    category. The result is the unweighted mean of ``A_i`` over those items, as a
    fraction in [0, 1] (multiply by 100 for percent). Items with fewer than 2
    ratings are ignored; NaN if none qualifies.
    """
    c = np.asarray(counts, dtype=np.int64)
    n_i = row_totals(c)
    ok = n_i >= 2
    if not ok.any():
        return float("nan")
    c, n_i = c[ok], n_i[ok]
    agree = row_totals(c * (c - 1)) / (n_i * (n_i - 1))
    return float(agree.mean())


def percent_agreement(items: ArrayLike, labels: ArrayLike) -> float:
    """Mean share of agreeing rater pairs per item (see :func:`percent_agreement_from_counts`).

    Missing labels are dropped; items left with fewer than 2 ratings are ignored.
    """
    return percent_agreement_from_counts(count_matrix(items, labels).counts)


def first_answers(items: ArrayLike, k: int) -> NDArray[np.bool_]:
    """Mask of the first ``k`` answers of every item, ``items`` given in order of arrival (one entry
    per answer). Under adaptive redundancy a question's later answers exist only because its first
    ones disagreed, so agreement over all answers (or over the questions with the modal count) is
    biased; the first ``min`` answers are collected whatever the outcome, which makes agreement on
    them that of a fixed design with R = ``min``."""
    it = np.asarray(items).reshape(-1)
    if it.size == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(it, kind="stable")
    sorted_items = it[order]
    starts = np.r_[0, np.flatnonzero(sorted_items[1:] != sorted_items[:-1]) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, it.size]))
    rank = np.empty(it.size, dtype=np.int64)
    rank[order] = np.arange(it.size) - group_start
    return rank < int(k)
