"""Shared array helpers for the metric functions (no Django, numpy only).

All metric functions accept "long" data: one row per answer (or per aggregated
label), given as parallel 1-D arrays. These helpers turn such arrays into integer
codes and count matrices with ``np.unique`` / ``np.bincount`` so that no Python
loop ever runs per answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "as_1d",
    "missing_mask",
    "encode",
    "index_in",
    "count_matrix",
    "CountMatrix",
]


def as_1d(x: ArrayLike, name: str = "array") -> NDArray[Any]:
    """Return ``x`` as a 1-D numpy array (object arrays keep their Python values)."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    return arr


def missing_mask(labels: ArrayLike) -> NDArray[np.bool_]:
    """True where a label is missing.

    A label is missing when it is ``None``, a floating NaN, or the empty string.
    Missing labels are never counted as ratings by any metric in this package.
    """
    arr = as_1d(labels, "labels")
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind in "iub":
        return np.zeros(arr.shape, dtype=bool)
    if arr.dtype.kind == "U" or arr.dtype.kind == "S":
        return arr == arr.dtype.type("")
    # object dtype: classify the (few) distinct values, then broadcast back.
    if arr.size == 0:
        return np.zeros(0, dtype=bool)
    mask = np.fromiter(
        (v is None or v == "" or (isinstance(v, float) and v != v) for v in arr),
        dtype=bool,
        count=arr.size,
    )
    return mask


def index_in(values: ArrayLike, order: Sequence[str]) -> NDArray[np.intp]:
    """Position of each string of ``values`` in ``order``, -1 where it is not there (one binary
    search per value over the sorted ``order``)."""
    arr = as_1d(values, "values")
    if not len(order) or not arr.size:
        return np.full(arr.size, -1, dtype=np.intp)
    names = np.asarray(order, dtype=str)
    sorter = np.argsort(names, kind="stable")
    sorted_names = names[sorter]
    pos = np.minimum(np.searchsorted(sorted_names, arr), len(names) - 1)
    found = sorted_names[pos] == arr
    return np.where(found, sorter[pos], -1).astype(np.intp, copy=False)


#: From this many integers (strings) :func:`encode` codes by hashing (pandas.factorize) instead of sorting:
#: 2-3x faster on integers from 4k values, 1.5x on strings from 100k (strings go through Python objects).
_HASH_FROM = 4096
_HASH_FROM_TEXT = 65536


def encode(
    values: ArrayLike, categories: Sequence[Any] | None = None
) -> tuple[NDArray[np.intp], NDArray[Any]]:
    """Integer-code ``values``.

    Returns ``(codes, uniques)`` with ``uniques[codes] == values``. When
    ``categories`` is given, codes follow its order and a value outside it raises
    ``ValueError`` (so a typo in a label never silently becomes a new category).
    """
    arr = as_1d(values, "values")
    if categories is None:
        if (arr.dtype.kind in "iu" and arr.size >= _HASH_FROM) or (arr.dtype.kind == "U" and arr.size >= _HASH_FROM_TEXT):
            # np.unique's result (sorted uniques, codes into them) from a hash table: O(n), not a sort of
            # every value (integers and strings only: no NaN, which pandas would code -1).
            import pandas as pd

            hashed, distinct = pd.factorize(arr, sort=True)
            return hashed.astype(np.intp, copy=False), np.asarray(distinct, dtype=arr.dtype)
        uniques, codes = np.unique(arr, return_inverse=True)
        return codes.astype(np.intp, copy=False), uniques
    cats = np.asarray(list(categories), dtype=object)
    if arr.dtype.kind == "U" and all(isinstance(c, str) for c in cats.tolist()):
        # Strings against a few known categories: a binary search per value (O(n log k)) instead
        # of sorting every value (np.unique); 4x faster on 333k names.
        codes = index_in(arr, cats.tolist())
        if (codes < 0).any():
            bad = arr[np.argmax(codes < 0)]
            raise ValueError(f"value {str(bad)!r} is not one of the categories {list(cats)}")
        return codes, cats
    uniques, inv = np.unique(arr, return_inverse=True)
    lookup = {c: i for i, c in enumerate(cats.tolist())}
    try:
        mapped = np.array([lookup[u] for u in uniques.tolist()], dtype=np.intp)
    except KeyError as exc:  # pragma: no cover - message path
        raise ValueError(f"value {exc.args[0]!r} is not one of the categories {list(cats)}") from None
    return mapped[inv] if uniques.size else np.zeros(0, dtype=np.intp), cats


class CountMatrix:
    """Items x categories count matrix built from long-format ratings.

    Attributes:
        item_ids: the distinct item ids (row order).
        categories: the category values (column order).
        counts: ``int64`` array, ``counts[i, j]`` = number of ratings of item i in category j.
    """

    __slots__ = ("item_ids", "categories", "counts")

    def __init__(self, item_ids: NDArray[Any], categories: NDArray[Any], counts: NDArray[np.int64]):
        self.item_ids = item_ids
        self.categories = categories
        self.counts = counts


def count_matrix(
    items: ArrayLike, labels: ArrayLike, categories: Sequence[Any] | None = None
) -> CountMatrix:
    """Count ratings per (item, category) with one ``np.bincount``.

    Rows whose label is missing (see :func:`missing_mask`) are dropped first, so an
    item whose ratings are all missing does not appear at all.
    """
    items_a = as_1d(items, "items")
    labels_a = as_1d(labels, "labels")
    if items_a.shape != labels_a.shape:
        raise ValueError("items and labels must have the same length")
    keep = ~missing_mask(labels_a)
    items_a, labels_a = items_a[keep], labels_a[keep]
    item_codes, item_ids = encode(items_a)
    cat_codes, cats = encode(labels_a, categories)
    k = len(cats)
    flat = np.bincount(item_codes * k + cat_codes, minlength=len(item_ids) * k)
    return CountMatrix(item_ids, cats, flat.reshape(len(item_ids), k).astype(np.int64))
