"""The array reductions the report's hot paths use instead of numpy's general ones (metrics/core/_arrays.py):
`row_totals` is ``counts.sum(axis=1)`` (values and dtype), `distinct_values` is ``set(values.tolist())`` and
`distinct_count` is ``np.unique(values).size``, for every input of the dtypes they take a shortcut for, and
the other dtypes still go the plain way."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from metrics.core._arrays import (
    _ROW_TOTAL_COLUMNS,
    _ROW_TOTAL_FLOAT_COLUMNS,
    distinct_count,
    distinct_values,
    row_totals,
)

INT_DTYPES = st.sampled_from([np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                              np.uint64])


@given(dtype=INT_DTYPES, rows=st.integers(0, 40), cols=st.integers(1, _ROW_TOTAL_COLUMNS + 3), data=st.data())
@settings(max_examples=300, deadline=None)
def test_row_totals_equal_numpy_sum(dtype: type, rows: int, cols: int, data: st.DataObject) -> None:
    counts = data.draw(hnp.arrays(dtype, (rows, cols)))
    if data.draw(st.booleans()):  # a view with strides (every other column of a wider matrix)
        counts = np.repeat(counts, 2, axis=1)[:, ::2]
    got, want = row_totals(counts), counts.sum(axis=1)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@given(dtype=st.sampled_from([np.float64, np.float32]), rows=st.integers(0, 40),
       cols=st.integers(1, _ROW_TOTAL_FLOAT_COLUMNS + 3), data=st.data())
@settings(max_examples=300, deadline=None)
def test_row_totals_of_floats_equal_numpy_sum_to_the_bit(dtype: type, rows: int, cols: int,
                                                        data: st.DataObject) -> None:
    """Floats: numpy sums a row of up to `_ROW_TOTAL_FLOAT_COLUMNS` left to right, so the column additions
    give its bits (signed zeros, infinities, NaN, magnitudes far apart included); past it, numpy's own."""
    counts = data.draw(hnp.arrays(dtype, (rows, cols), elements=st.floats(width=32 if dtype == np.float32 else 64)))
    if data.draw(st.booleans()):
        counts = np.repeat(counts, 2, axis=1)[:, ::2]
    if data.draw(st.booleans()):
        counts = np.asfortranarray(counts)
    with np.errstate(all="ignore"):  # inf + -inf, overflow: both sides the same
        got, want = row_totals(counts), counts.sum(axis=1)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


def test_row_totals_of_floats_far_apart_and_other_shapes_are_numpys_own() -> None:
    rng = np.random.default_rng(3)
    for k in range(1, _ROW_TOTAL_FLOAT_COLUMNS + 4):  # rounding that depends on the order of the additions
        floats = rng.standard_normal((5000, k)) * 10.0 ** rng.integers(-8, 8, (5000, k))
        assert row_totals(floats).tobytes() == floats.sum(axis=1).tobytes()
    assert row_totals(np.zeros((4, 0), dtype=np.int64)).tolist() == [0, 0, 0, 0]
    wide = np.arange(3 * (_ROW_TOTAL_COLUMNS + 5)).reshape(3, -1)
    np.testing.assert_array_equal(row_totals(wide), wide.sum(axis=1))


VALUES = st.one_of(
    st.lists(st.sampled_from(["", "a", "b", "neutral", "explicit", "x\x00y", "é"]), max_size=60).map(
        lambda names: np.array(names, dtype=str)),
    hnp.arrays(hnp.unicode_string_dtypes(max_len=3), st.integers(0, 60)),
    hnp.arrays(st.sampled_from([np.int64, np.uint8, np.bool_]), st.integers(0, 60)),
    hnp.arrays(np.int64, st.integers(0, 60), elements=st.integers(-3, 3)),
)


@given(values=VALUES, peel=st.integers(0, 10))
@settings(max_examples=300, deadline=None)
def test_distinct_values_equal_the_set_of_the_list(values: np.ndarray, peel: int) -> None:
    got = distinct_values(values, peel=peel)
    assert got == set(values.tolist())
    assert {type(v) for v in got} == {type(v) for v in values.tolist()}


def test_distinct_values_of_floats_with_nan_go_the_plain_way() -> None:
    values = np.array([1.0, np.nan, 1.0, 2.0])
    got = distinct_values(values)
    assert 1.0 in got and 2.0 in got and len(got) == 3  # the NaN counted once, as set() of the list does


@given(values=hnp.arrays(st.sampled_from([np.int64, np.int32, np.uint16]), st.integers(0, 200)))
@settings(max_examples=200, deadline=None)
def test_distinct_count_equals_np_unique(values: np.ndarray) -> None:
    assert distinct_count(values) == np.unique(values).size
