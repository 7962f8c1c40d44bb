"""`encode` of strings: the short-text path (code points packed into integers, metrics/core/_arrays.py) gives
exactly what ``np.unique(..., return_inverse=True)`` gives, for every string array: any Unicode (astral
characters, combining marks, NUL inside a string), empty strings, one to twelve characters, one distinct
value or all distinct, and the mixed-radix renumbering past int64 (many groups of characters)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core import _arrays
from metrics.core._arrays import _short_text_codes, encode

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


def _assert_like_unique(arr: np.ndarray) -> None:
    uniques, inverse = np.unique(arr, return_inverse=True)
    codes, got = _short_text_codes(arr)
    np.testing.assert_array_equal(got, uniques)
    np.testing.assert_array_equal(codes, inverse.reshape(-1))
    assert codes.dtype == np.intp


@given(values=st.lists(TEXT, min_size=1, max_size=300), repeat=st.integers(1, 4))
@settings(max_examples=300, deadline=None)
def test_short_text_codes_equal_np_unique(values: list[str], repeat: int) -> None:
    _assert_like_unique(np.asarray(values * repeat, dtype=str))


def test_a_string_with_a_nul_inside_and_strings_that_differ_only_after_three_characters() -> None:
    _assert_like_unique(np.array(["a\x00b", "a", "ab", "abcdefghijkl", "abcdefghijkm", "abc", "abd", ""], dtype=str))


def test_many_distinct_long_strings_renumber_inside_int64(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four groups of characters with many distinct values each: the mixed radix would pass 2**62, so the
    codes are renumbered between groups; the result is still np.unique's."""
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
    arr = np.array(["".join(row) for row in rng.choice(letters, size=(4_000, 12))], dtype=str)
    renumbered = []
    real = _arrays._dense
    monkeypatch.setattr(_arrays, "_RADIX_LIMIT", 1 << 20)  # as 2**62 is for 10M rows, at this size
    monkeypatch.setattr(_arrays, "_dense", lambda c, k: renumbered.append(k) or real(c, k))
    _assert_like_unique(np.concatenate([arr, arr[::7]]))
    assert len(renumbered) >= 2 and max(renumbered) >= 1 << 20


def test_encode_takes_the_short_text_path_for_large_short_string_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    labels = rng.choice(np.array(["Yes", "No", "tie", ""]), _arrays._HASH_FROM_TEXT + 5)
    calls = []
    real = _arrays._short_text_codes
    monkeypatch.setattr(_arrays, "_short_text_codes", lambda a: calls.append(a.size) or real(a))
    codes, uniques = encode(labels)
    assert calls == [labels.size]
    want_uniques, want_codes = np.unique(labels, return_inverse=True)
    np.testing.assert_array_equal(uniques, want_uniques)
    np.testing.assert_array_equal(codes, want_codes)
    long_names = np.char.add(labels, "-a-long-attribute-name")  # past _SHORT_TEXT: the general path
    encode(long_names)
    encode(labels[:100])  # small: np.unique
    assert calls == [labels.size]
