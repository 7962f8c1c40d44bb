"""The vectorised permutation test (metrics/core/annotator_permutations.py) gives what the loop over
permutations gives: the same observed figures and the same p-values, for PST and GEP answer-level
headlines with Krippendorff's alpha (issue 23)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from metrics.core.annotator_groups import HeadlineWithAlpha, gep_headline, permutation_test_groups, pst_headline
from metrics.core.annotator_permutations import LinearStatistic

PST_CHOICES = ["Cannot identify", "Feminine", "Masculine"]


def _campaign(rng, n_q, n_annotators, k, per_question=3, lean=None):
    q = np.repeat(np.arange(n_q), per_question)
    who = np.concatenate([rng.choice(n_annotators, per_question, replace=False) for _ in range(n_q)])
    code = rng.integers(0, k, q.size)
    if lean is not None:  # some annotators lean to one choice: a real difference between groups
        code = np.where(np.isin(who, lean) & (rng.random(q.size) < 0.5), k - 1, code)
    return q, who, code


def _loop(stat):
    return lambda counts: stat(counts)  # a plain callable: the test runs its loop


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_equals_loop_pst(seed):
    rng = np.random.default_rng(seed)
    n_q, n_ann = 300, 24
    q, who, code = _campaign(rng, n_q, n_ann, 3, lean=list(range(4)))
    stereotypes = rng.choice(["feminine", "masculine"], n_q)
    settings = rng.choice(["single", "paired", "intervention"], n_q)
    for treatment in ("paper", "excluded"):
        headline = pst_headline(PST_CHOICES, stereotypes, settings, ["single", "paired", "intervention"], treatment,
                                unit="answer")
        assert isinstance(headline, LinearStatistic)
        stat = HeadlineWithAlpha(headline)
        a, b = list(range(0, 8)), list(range(8, 18))
        fast = permutation_test_groups(q, who, code, n_q, 3, a, b, stat, n_perm=150, seed=seed)
        slow = permutation_test_groups(q, who, code, n_q, 3, a, b, _loop(stat), n_perm=150, seed=seed)
        assert np.array_equal(fast.a, slow.a, equal_nan=True) and np.array_equal(fast.b, slow.b, equal_nan=True)
        # The report's STS headlines (ratios) are tested studentized (3 of the 4 statistics); the loop, which
        # knows no parts, tests the raw difference: alpha's p-value is the same in both...
        assert fast.studentized == 3 and slow.studentized == 0
        assert fast.p_value[3] == slow.p_value[3]
        # ... and with the ratio marker removed, the vectorised raw test is the loop's, shuffle for shuffle.
        raw = HeadlineWithAlpha(LinearStatistic(headline, replace(headline.parts, ratio_scale=None)))
        fast_raw = permutation_test_groups(q, who, code, n_q, 3, a, b, raw, n_perm=150, seed=seed)
        assert fast_raw.studentized == 0
        assert np.array_equal(fast_raw.p_value, slow.p_value, equal_nan=True)
        assert fast.p_value.shape == (4,) and np.isfinite(fast.p_value).all()
    assert fast.p_value.min() < 1.0


@pytest.mark.parametrize("seed", [3, 4])
def test_vectorised_equals_loop_gep(seed):
    rng = np.random.default_rng(seed)
    n_q, n_ann = 400, 30
    q, who, code = _campaign(rng, n_q, n_ann, 2, per_question=4, lean=list(range(5)))
    genders = rng.choice(["woman", "man"], n_q)
    attributes = rng.choice(["dress", "suit", "tie", "skirt"], n_q)
    settings = rng.choice(["neutral", "explicit"], n_q)
    for policy in ("absent", "present", "exclude"):
        headline = gep_headline(["No", "Yes"], genders, attributes, settings, ["neutral", "explicit"], ["woman", "man"],
                                policy, unit="answer")
        stat = HeadlineWithAlpha(headline)
        a, b = list(range(0, 10)), list(range(10, 30))
        fast = permutation_test_groups(q, who, code, n_q, 2, a, b, stat, n_perm=120, seed=seed)
        slow = permutation_test_groups(q, who, code, n_q, 2, a, b, _loop(stat), n_perm=120, seed=seed)
        assert np.array_equal(fast.difference, slow.difference, equal_nan=True)
        assert np.array_equal(fast.p_value, slow.p_value, equal_nan=True)
        # Without alpha too (the headline alone).
        fast = permutation_test_groups(q, who, code, n_q, 2, a, b, headline, n_perm=120, seed=seed)
        slow = permutation_test_groups(q, who, code, n_q, 2, a, b, _loop(headline), n_perm=120, seed=seed)
        assert np.array_equal(fast.p_value, slow.p_value, equal_nan=True)
