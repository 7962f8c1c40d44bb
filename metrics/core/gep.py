"""Gender presentation differences (GEP): attribute frequencies, GEP vector, GEP score.

Input is one row per (image, attribute) QUESTION with its aggregated label:
parallel arrays of image id, gender (e.g. "A woman"), attribute (e.g. "dress"),
context, and label ("yes" / "no" / "tie", case-insensitive; booleans accepted;
``None`` / NaN / ``""`` = missing).

Which rows the caller passes defines the setting (the functions do not guess):

- neutral: every image of gender g_i is annotated for every attribute, so the
  rows for (g_i, a_j) are all images of g_i -> f_ij is over all images of g_i;
- explicit: each image is annotated only for the attribute in its prompt, so the
  rows for (g_i, a_j) are the images of g_i whose prompt names a_j.

In both cases ``f_ij = (# rows of g_i, a_j labelled present) / (# rows of g_i,
a_j counted)``.

Ties (``"tie"`` from :func:`metrics.core.aggregation.majority_vote`) follow
``tie_policy``: ``"absent"`` (default; a tie is not a confident "yes", matching
the annotation instructions "if you are not certain, answer No"), ``"present"``,
or ``"exclude"`` (dropped from numerator and denominator). Missing labels are
always dropped from both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._arrays import as_1d, encode, missing_mask

__all__ = [
    "GepTiePolicy",
    "Frequencies",
    "present_weights",
    "attribute_frequencies",
    "gep_vector",
    "gep_score",
    "gep_report",
    "gep_by_context",
    "RowCodes",
    "row_codes",
]

GepTiePolicy = Literal["absent", "present", "exclude"]

_YES = {"yes", "true", "1", "present", "y"}
_NO = {"no", "false", "0", "absent", "n"}


@dataclass(frozen=True)
class Frequencies:
    """``freq[i, j]`` = f_ij for ``genders[i]``, ``attributes[j]``; ``present`` and
    ``total`` are the numerator and denominator counts (NaN frequency where
    ``total == 0``). ``ties`` counts tied questions per cell, whatever the policy."""

    genders: list[Any]
    attributes: list[Any]
    freq: NDArray[np.float64]
    present: NDArray[np.int64]
    total: NDArray[np.int64]
    ties: NDArray[np.int64]


@dataclass(frozen=True)
class RowCodes:
    """The label-independent coding of one set of GEP rows: gender and attribute codes in the given orders
    (as :func:`attribute_frequencies` encodes them: a value outside an order raises) and image codes
    (sorted distinct ids). For callers that score many label vectors over the same rows (each annotator
    group's figures over a setting's questions): the rows are coded once, not once per label vector."""

    g_codes: NDArray[np.intp]
    g_ids: NDArray[Any]
    a_codes: NDArray[np.intp]
    a_ids: NDArray[Any]
    i_codes: NDArray[np.intp]
    i_ids: NDArray[Any]


def row_codes(images: ArrayLike, genders: ArrayLike, attributes: ArrayLike, gender_order: Sequence[Any] | None,
              attribute_order: Sequence[Any] | None) -> RowCodes:
    """:class:`RowCodes` of parallel arrays of image id, gender and attribute per row."""
    g_codes, g_ids = encode(as_1d(genders, "genders"), gender_order)
    a_codes, a_ids = encode(as_1d(attributes, "attributes"), attribute_order)
    i_codes, i_ids = encode(as_1d(images, "image_ids"))
    return RowCodes(g_codes, g_ids, a_codes, a_ids, i_codes, i_ids)


def present_weights(
    labels: ArrayLike, tie_policy: GepTiePolicy = "absent"
) -> tuple[NDArray[np.int8], NDArray[np.int8], NDArray[np.bool_]]:
    """Per row ``(present, counted, is_tie)`` as 0/1 arrays under ``tie_policy``."""
    arr = as_1d(labels, "labels")
    miss = missing_mask(arr)
    kind = np.full(arr.shape, -1, dtype=np.int8)  # -1 missing, 0 no, 1 yes, 2 tie
    vals = arr[~miss]
    if vals.size:
        codes, uniques = encode(np.asarray([str(v) for v in vals]) if vals.dtype.kind == "O" else vals.astype(str))
        table = np.empty(len(uniques), dtype=np.int8)
        for i, u in enumerate(uniques.tolist()):  # distinct values only
            key = str(u).strip().lower()
            if key in _YES:
                table[i] = 1
            elif key in _NO:
                table[i] = 0
            elif key == "tie":
                table[i] = 2
            else:
                raise ValueError(f"unknown GEP label {u!r}; expected yes / no / tie")
        kind[~miss] = table[codes]
    is_tie = kind == 2
    if tie_policy == "absent":
        present, counted = kind == 1, kind >= 0
    elif tie_policy == "present":
        present, counted = (kind == 1) | is_tie, kind >= 0
    elif tie_policy == "exclude":
        present, counted = kind == 1, (kind == 0) | (kind == 1)
    else:
        raise ValueError(f"unknown tie_policy {tie_policy!r}")
    return present.astype(np.int8), counted.astype(np.int8), is_tie


def attribute_frequencies(
    genders: ArrayLike | None,
    attributes: ArrayLike | None,
    labels: ArrayLike,
    gender_order: Sequence[Any] | None = None,
    attribute_order: Sequence[Any] | None = None,
    tie_policy: GepTiePolicy = "absent",
    codes: RowCodes | None = None,
) -> Frequencies:
    """f_ij = present / counted per (gender, attribute); see the module docstring
    for which rows define the setting and how ties / missing labels count.
    ``gender_order`` fixes row order (the GEP vector is row 0 minus row 1);
    rows whose gender/attribute is not in a given order raise ``ValueError``.
    ``codes``: :func:`row_codes` of these rows and orders when the caller has them (not recomputed; then
    ``genders`` and ``attributes`` are not read and may be None)."""
    if codes is None:
        if genders is None or attributes is None:
            raise ValueError("attribute_frequencies needs the rows' genders and attributes, or their codes")
        g_codes, g_ids = encode(as_1d(genders, "genders"), gender_order)
        a_codes, a_ids = encode(as_1d(attributes, "attributes"), attribute_order)
    else:
        g_codes, g_ids, a_codes, a_ids = codes.g_codes, codes.g_ids, codes.a_codes, codes.a_ids
    present, counted, is_tie = present_weights(labels, tie_policy)
    ng, na = len(g_ids), len(a_ids)
    cell = g_codes * na + a_codes
    pres = np.bincount(cell, weights=present, minlength=ng * na).reshape(ng, na).astype(np.int64)
    tot = np.bincount(cell, weights=counted, minlength=ng * na).reshape(ng, na).astype(np.int64)
    ties = np.bincount(cell, weights=is_tie, minlength=ng * na).reshape(ng, na).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        freq = np.where(tot > 0, pres / np.where(tot > 0, tot, 1), np.nan)
    return Frequencies(g_ids.tolist(), a_ids.tolist(), freq, pres, tot, ties)


def gep_vector(freq: NDArray[np.float64], first: int = 0, second: int = 1) -> NDArray[np.float64]:
    """GEP vector ``v_j = f_first,j - f_second,j`` (paper: woman minus man).
    NaN where either frequency is undefined."""
    f = np.asarray(freq, dtype=float)
    return f[first] - f[second]


def gep_score(vector: ArrayLike) -> float:
    """GEP score = (1/n) * sum_j |v_j| (normalised L1). Attributes whose v_j is NaN
    (no rows for one gender) are left out of both sum and n; NaN if none is left."""
    v = np.asarray(vector, dtype=float)
    ok = ~np.isnan(v)
    return float(np.abs(v[ok]).mean()) if ok.any() else float("nan")


def gep_report(
    genders: ArrayLike | None,
    attributes: ArrayLike | None,
    labels: ArrayLike,
    gender_order: Sequence[Any],
    attribute_order: Sequence[Any] | None = None,
    tie_policy: GepTiePolicy = "absent",
    frequencies: Frequencies | None = None,
) -> dict[str, Any]:
    """Frequencies, GEP vector (gender_order[0] - gender_order[1]) and GEP score. ``frequencies``: the
    :func:`attribute_frequencies` of these same arguments when the caller has them (not recomputed).

    Returns plain data: ``{"frequencies": {gender: {attribute: f}}, "vector":
    {attribute: v}, "score": float, "n_attributes": int, "counts": {gender:
    {attribute: {"present", "total", "ties"}}}, "tie_policy": str}``."""
    fr = frequencies if frequencies is not None else attribute_frequencies(
        genders, attributes, labels, gender_order, attribute_order, tie_policy)
    v = gep_vector(fr.freq)
    return {
        "tie_policy": tie_policy,
        "frequencies": {g: dict(zip(fr.attributes, map(float, row))) for g, row in zip(fr.genders, fr.freq)},
        "vector": dict(zip(fr.attributes, map(float, v))),
        "score": gep_score(v),
        "n_attributes": int((~np.isnan(v)).sum()),
        "counts": {
            g: {
                a: {"present": int(p), "total": int(t), "ties": int(k)}
                for a, p, t, k in zip(fr.attributes, pr, tr, kr)
            }
            for g, pr, tr, kr in zip(fr.genders, fr.present, fr.total, fr.ties)
        },
    }


def gep_by_context(
    contexts: ArrayLike,
    genders: ArrayLike,
    attributes: ArrayLike,
    labels: ArrayLike,
    gender_order: Sequence[Any],
    attribute_order: Sequence[Any] | None = None,
    tie_policy: GepTiePolicy = "absent",
) -> dict[Any, float]:
    """GEP score per context (paper Table 15): the same computation restricted to
    the rows of each context. Vectorised over contexts with one bincount on
    (context, gender, attribute)."""
    c_codes, c_ids = encode(as_1d(contexts, "contexts"))
    g_codes, _ = encode(as_1d(genders, "genders"), gender_order)
    a_codes, a_ids = encode(as_1d(attributes, "attributes"), attribute_order)
    present, counted, _ = present_weights(labels, tie_policy)
    nc, ng, na = len(c_ids), len(gender_order), len(a_ids)
    cell = (c_codes * ng + g_codes) * na + a_codes
    pres = np.bincount(cell, weights=present, minlength=nc * ng * na).reshape(nc, ng, na)
    tot = np.bincount(cell, weights=counted, minlength=nc * ng * na).reshape(nc, ng, na)
    with np.errstate(invalid="ignore", divide="ignore"):
        freq = np.where(tot > 0, pres / np.where(tot > 0, tot, 1), np.nan)
    v = freq[:, 0, :] - freq[:, 1, :]
    return {c: gep_score(row) for c, row in zip(c_ids.tolist(), v)}
