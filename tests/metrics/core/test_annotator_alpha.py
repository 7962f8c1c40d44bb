"""Alpha of two groups of annotators under every permutation (metrics/core/annotator_alpha.py) equals
the direct computation (every answer's group counts per permutation), for questions with two, three
and more answers, repeated annotators, two to five choices, and pools drawn from a larger set of
annotators (issue 23: the annotators section at 10M answers)."""
from __future__ import annotations

import numpy as np
import pytest

from metrics.core.annotator_alpha import (
    answer_pairs,
    coincidences_direct,
    column_counts,
    permuted_coincidences,
    pool_coincidences,
)
from metrics.core.annotator_groups import HeadlineWithAlpha, gep_headline, permutation_test_groups


@pytest.mark.parametrize("rows", [0, 1, 2, 7, 64, 1001])
def test_column_counts_counts_each_bit(rows):
    rng = np.random.default_rng(rows)
    words = rng.integers(0, 2 ** 63, size=(rows, 3), dtype=np.uint64) | np.uint64(1 << 63) * (rows % 2)
    expected = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little").sum(axis=0) if rows else np.zeros(192)
    assert np.array_equal(column_counts(words), expected)


def _answers(rng, n_q, n_annotators, k, per_question, repeats):
    q = np.repeat(np.arange(n_q), per_question)
    who = np.concatenate([rng.choice(n_annotators, p, replace=repeats) for p in per_question])
    return q, who, rng.integers(0, k, q.size)


def _sides(rng, n_pool, n_a, n_perm):
    base = np.arange(n_pool) < n_a
    return np.stack([rng.permutation(base) for _ in range(n_perm)])


def _direct(q, code, pos, k, sides):
    m = np.bincount(q)[q]
    keep = m >= 2
    return coincidences_direct(q[keep], code[keep], pos[keep], k, sides)


@pytest.mark.parametrize(("k", "low", "high", "repeats"), [(2, 2, 4, False), (3, 1, 7, False), (5, 2, 4, True),
                                                          (2, 1, 6, True)])
def test_permuted_coincidences_equal_direct(k, low, high, repeats):
    rng = np.random.default_rng(k * 10 + high)
    n_q, n_pool = 400, 30
    q, pos, code = _answers(rng, n_q, n_pool, k, rng.integers(low, high, n_q), repeats)
    sides = _sides(rng, n_pool, 11, 150)
    fast = permuted_coincidences(q, code, pos, n_pool, n_q, k, sides)
    slow = _direct(q, code, pos, k, sides)
    for f, s in zip(fast, slow, strict=True):
        assert f.shape == (150, k * k)
        assert np.allclose(f, s, rtol=0, atol=1e-9)
    assert fast[0].sum() > 0 and fast[1].sum() > 0


def test_pool_of_a_larger_set_of_annotators():
    """Pairs built once over every answer; a pool (some without answers) sees only its own answers."""
    rng = np.random.default_rng(5)
    n_q, n_annotators, k = 600, 40, 2
    q, who, code = _answers(rng, n_q, n_annotators, k, rng.integers(1, 5, n_q), False)
    pairs = answer_pairs(q, who, code, n_q, k, n_annotators + 2)  # two annotators without answers
    pool = np.array([3, 7, 41, 12, 19, 25, 30, 2, 40, 33])
    sides = _sides(rng, pool.size, 4, 90)
    fast = pool_coincidences(pairs, pool, sides)
    slot = np.full(n_annotators + 3, -1)
    slot[pool] = np.arange(pool.size)
    inside = slot[who] >= 0
    slow = _direct(q[inside], code[inside], slot[who[inside]], k, sides)
    for f, s in zip(fast, slow, strict=True):
        assert np.allclose(f, s, rtol=0, atol=1e-9)


def test_cached_pairs_give_each_pair_of_groups_its_own_test():
    """One statistic reused over several pairs of groups (the section's use): each test equals the test
    with a fresh statistic and the loop over permutations."""
    rng = np.random.default_rng(9)
    n_q, n_annotators = 500, 36
    q, who, code = _answers(rng, n_q, n_annotators, 2, np.full(n_q, 3), False)
    who = who + 100  # annotator ids are database keys, not positions
    genders = rng.choice(["woman", "man"], n_q)
    attributes = rng.choice(["dress", "suit", "tie"], n_q)
    settings = np.full(n_q, "neutral")

    def stat():
        return HeadlineWithAlpha(gep_headline(["No", "Yes"], genders, attributes, settings, ["neutral"],
                                              ["woman", "man"], "absent", unit="answer"))

    shared = stat()
    groups = [list(range(100, 112)), list(range(112, 124)), list(range(124, 136))]
    for a, b in ((0, 1), (0, 2), (1, 2)):
        reused = permutation_test_groups(q, who, code, n_q, 2, groups[a], groups[b], shared, n_perm=80, seed=a + b)
        fresh = permutation_test_groups(q, who, code, n_q, 2, groups[a], groups[b], stat(), n_perm=80, seed=a + b)
        plain = stat()
        loop = permutation_test_groups(q, who, code, n_q, 2, groups[a], groups[b], lambda c, s=plain: s(c),
                                       n_perm=80, seed=a + b)
        assert np.array_equal(reused.p_value, fresh.p_value, equal_nan=True)
        assert np.array_equal(reused.p_value, loop.p_value, equal_nan=True)
        assert np.array_equal(reused.difference, loop.difference, equal_nan=True)
