"""Figures per group of annotators: majority codes, headline statistics equal to the report's
functions on the same labels, and the permutation test over annotators."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core import gep, pst
from metrics.core.aggregation import majority_vote_from_counts
from metrics.core.agreement import krippendorff_alpha_from_counts
from metrics.core.annotator_groups import (
    alpha_stat,
    gep_headline,
    group_counts,
    group_statistic,
    majority_codes,
    permutation_test_groups,
    pst_headline,
)

PST_CHOICES = ["Cannot identify", "Feminine", "Masculine"]


def test_majority_codes_mark_ties_and_unanswered():
    counts = np.array([[2, 1, 0], [1, 1, 0], [0, 0, 0], [0, 0, 3]])
    assert majority_codes(counts).tolist() == [0, 3, 4, 2]


def _random_counts(rng, n_q, k, raters=3):
    counts = np.zeros((n_q, k), dtype=np.int64)
    for i in range(n_q):
        for _ in range(rng.integers(0, raters + 1)):
            counts[i, rng.integers(0, k)] += 1
    return counts


def test_answer_level_statistics_count_every_answer():
    counts = np.array([[0, 3, 1], [2, 0, 0]])  # person 0: 3 Feminine, 1 Masculine; person 1: 2 Cannot identify
    stereotypes = np.array(["feminine", "masculine"])
    stat = pst_headline(PST_CHOICES, stereotypes, np.array(["single", "single"]), ["single"], "paper", unit="answer")
    assert stat(counts)[0] == pytest.approx(100 * (3 - 1 - 2) / 6)
    excluded = pst_headline(PST_CHOICES, stereotypes, np.array(["single", "single"]), ["single"], "excluded",
                            unit="answer")
    assert excluded(counts)[0] == pytest.approx(100 * (3 - 1) / 4)
    g = gep_headline(["No", "Yes"], np.array(["woman", "man"]), np.array(["dress", "dress"]),
                     np.array(["explicit"] * 2), ["explicit"], ["woman", "man"], "absent", unit="answer")
    assert g(np.array([[1, 3], [3, 1]]))[0] == pytest.approx(0.5)


def test_pst_headline_equals_overall_sts_per_setting():
    rng = np.random.default_rng(3)
    n = 60
    stereotypes = rng.choice(["feminine", "masculine"], n)
    settings = rng.choice(["single", "paired"], n)
    counts = _random_counts(rng, n, 3)
    labels, _ = majority_vote_from_counts(counts, PST_CHOICES, tie_policy="tie", missing_value="")
    for treatment in ("paper", "excluded"):
        stat = pst_headline(PST_CHOICES, stereotypes, settings, ["single", "paired"], treatment)
        got = stat(counts)
        for i, s in enumerate(["single", "paired"]):
            m = settings == s
            assert got[i] == pytest.approx(pst.overall_sts(labels[m], stereotypes[m], treatment), nan_ok=True)


def test_gep_headline_equals_gep_score_per_setting():
    rng = np.random.default_rng(4)
    n = 200
    genders = rng.choice(["woman", "man"], n)
    attributes = rng.choice(["dress", "tie", "boots"], n)
    settings = rng.choice(["neutral", "explicit"], n)
    counts = _random_counts(rng, n, 2)
    labels, _ = majority_vote_from_counts(counts, ["No", "Yes"], tie_policy="tie", missing_value="")
    for policy in ("absent", "present", "exclude"):
        stat = gep_headline(["No", "Yes"], genders, attributes, settings, ["neutral", "explicit"], ["woman", "man"],
                            policy)
        got = stat(counts)
        for i, s in enumerate(["neutral", "explicit"]):
            m = settings == s
            expected = gep.gep_report(genders[m], attributes[m], labels[m], ["woman", "man"], None, policy)["score"]
            assert got[i] == pytest.approx(expected)


def test_alpha_stat_equals_krippendorff():
    counts = _random_counts(np.random.default_rng(5), 80, 3, raters=4)
    counts = counts[counts.sum(axis=1) > 0]
    assert alpha_stat(counts)[0] == pytest.approx(krippendorff_alpha_from_counts(counts).alpha)


def _answers(n_q, group_a, group_b, choice_a, choice_b):
    rows = [(q, a, choice_a(q)) for q in range(n_q) for a in group_a] + \
           [(q, b, choice_b(q)) for q in range(n_q) for b in group_b]
    q, who, code = (np.array(c) for c in zip(*rows, strict=True))
    return q, who, code


def test_groups_that_answer_differently_are_detected():
    n_q = 40
    women, men = [1, 2, 3, 4, 5], [6, 7, 8, 9, 10]
    # Women say "Feminine" (1) for everyone, men "Masculine" (2): half the persons are stereotyped feminine.
    q, who, code = _answers(n_q, women, men, lambda i: 1, lambda i: 2)
    stereotypes = np.array(["feminine", "masculine"] * (n_q // 2))
    stat = pst_headline(PST_CHOICES, stereotypes, np.array(["single"] * n_q), ["single"], "paper")
    t = permutation_test_groups(q, who, code, n_q, 3, women, men, stat, n_perm=200, seed=1)
    assert t.a[0] == pytest.approx(0.0) and t.b[0] == pytest.approx(0.0)  # same STS, opposite answers
    women_more = _answers(n_q, women, men, lambda i: 1 if i % 2 == 0 else 2, lambda i: 0)
    t = permutation_test_groups(*women_more, n_q, 3, women, men, stat, n_perm=200, seed=1)
    assert t.a[0] == pytest.approx(100.0) and t.b[0] == pytest.approx(-100.0)
    # On majority figures a random 3-2 split of the ten is as extreme: no power (the module docstring).
    assert t.difference[0] == pytest.approx(200.0) and t.p_value[0] == pytest.approx(1.0)
    answers = pst_headline(PST_CHOICES, stereotypes, np.array(["single"] * n_q), ["single"], "paper", unit="answer")
    t = permutation_test_groups(*women_more, n_q, 3, women, men, answers, n_perm=200, seed=1)
    assert t.difference[0] == pytest.approx(200.0)
    # Only the 2 of 252 splits that keep the groups give 200: p = (1 + about 200 * 2/252) / 201.
    assert t.p_value[0] < 0.02


def test_groups_that_answer_alike_are_not_detected():
    rng = np.random.default_rng(7)
    n_q = 60
    women, men = list(range(6)), list(range(6, 12))
    q = np.repeat(np.arange(n_q), 12)
    who = np.tile(np.arange(12), n_q)
    code = rng.integers(0, 3, q.size)  # everyone answers at random, the same way
    stereotypes = rng.choice(["feminine", "masculine"], n_q)
    stat = pst_headline(PST_CHOICES, stereotypes, np.array(["single"] * n_q), ["single"], "paper")
    t = permutation_test_groups(q, who, code, n_q, 3, women, men, stat, n_perm=300, seed=2)
    assert t.p_value[0] > 0.05
    # The observed sides are the groups' own figures.
    counts = group_counts(q, code, np.isin(who, women), n_q, 3)
    assert t.a[0] == pytest.approx(stat(counts)[0])
    with pytest.raises(ValueError):
        permutation_test_groups(q, who, code, n_q, 3, women, [], stat)


def test_answer_level_sts_is_tested_on_its_studentized_difference():
    from metrics.core.annotator_permutations import permuted_studentized

    rng = np.random.default_rng(5)
    n_q, n_ann = 30, 14
    q = np.concatenate([rng.choice(n_q, size=4 + 2 * j, replace=False) for j in range(n_ann)])
    who = np.concatenate([np.full(4 + 2 * j, j) for j in range(n_ann)])
    code = rng.integers(0, 3, q.size)
    stereotypes = rng.choice(["feminine", "masculine"], n_q)
    stat = pst_headline(PST_CHOICES, stereotypes, np.array(["single"] * n_q), ["single"], "paper", unit="answer")
    a, b = list(range(4)), list(range(4, n_ann))
    t = permutation_test_groups(q, who, code, n_q, 3, a, b, stat, n_perm=300, seed=3)
    assert t.studentized == 1 and 0.0 < t.p_value[0] <= 1.0
    # The studentized difference by hand: per annotator y = 100 * sum of Stereo, x = counted answers.
    s, w = pst.stereo_weights(np.array(PST_CHOICES, dtype=object)[code], stereotypes[q], "paper")
    y = np.bincount(who, weights=s * w, minlength=n_ann)
    x = np.bincount(who, weights=w, minlength=n_ann)

    def ratio_var(group: list[int]) -> tuple[float, float]:
        r = y[group].sum() / x[group].sum()
        g = len(group)
        return 100 * r, 100**2 * g / (g - 1) * ((y[group] - r * x[group]) ** 2).sum() / x[group].sum() ** 2

    (ra, va), (rb, vb) = ratio_var(a), ratio_var(b)
    side = np.arange(n_ann) < 4
    got = permuted_studentized(q, code, who.astype(np.intp), n_ann, side[None], stat.parts)
    assert got[0, 0] == pytest.approx((ra - rb) / np.sqrt(va + vb))
    assert t.difference[0] == pytest.approx(ra - rb)  # the reported difference stays the raw one


def test_a_groups_statistic_computed_once_gives_the_same_test():
    """The section computes each group's own statistic once for all its pairs (`group_statistic`, over every
    answer): the test given it equals the test that counts the pair's pool itself, to the bit."""
    from metrics.core.annotator_groups import HeadlineWithAlpha

    rng = np.random.default_rng(11)
    n_q = 80
    q = np.repeat(np.arange(n_q), 15)
    who = np.tile(np.arange(15), n_q)
    keep = rng.random(q.size) < 0.7  # not everyone answers everything
    q, who = q[keep], who[keep]
    code = rng.integers(0, 3, q.size)
    stereotypes = rng.choice(["feminine", "masculine"], n_q)
    stat = HeadlineWithAlpha(pst_headline(PST_CHOICES, stereotypes, rng.choice(["single", "paired"], n_q),
                                          ["single", "paired"], "paper", unit="answer"))
    groups = {"a": [0, 1, 2, 3, 4], "b": [5, 6, 7, 8], "c": [9, 10, 11, 12, 13, 14]}
    own = {g: group_statistic(q, who, code, n_q, 3, m, stat) for g, m in groups.items()}
    for x, y in (("a", "b"), ("a", "c"), ("b", "c")):
        plain = permutation_test_groups(q, who, code, n_q, 3, groups[x], groups[y], stat, n_perm=99, seed=3)
        given = permutation_test_groups(q, who, code, n_q, 3, groups[x], groups[y], stat, n_perm=99, seed=3,
                                        group_statistics=(own[x], own[y]))
        for field in ("a", "b", "difference", "p_value"):
            np.testing.assert_array_equal(getattr(given, field), getattr(plain, field))
        assert given.studentized == plain.studentized
    assert not np.array_equal(own["a"], own["b"])  # the groups differ: the check can tell them apart


@given(who=st.lists(st.integers(-3, 40), max_size=60), pool=st.lists(st.integers(-3, 40), max_size=12),
       big=st.booleans())
@settings(max_examples=200, deadline=None)
def test_pool_positions_equal_isin_and_binary_search(who: list[int], pool: list[int], big: bool) -> None:
    """The table lookup gives what `np.isin` and a binary search over the sorted pool give, for every
    input: negative ids, ids past the table's range (`big`), a pool with repeats (both fall back to the
    search), answers of annotators outside the pool, empty sides."""
    from metrics.core import annotator_permutations as ag

    w = np.asarray(who, dtype=np.int64) + (ag._TABLE_IDS if big else 0)
    p = np.asarray(pool, dtype=np.int64) + (ag._TABLE_IDS if big else 0)
    inside, pos = ag.pool_positions(w, p)
    want_inside = np.isin(w, p)
    np.testing.assert_array_equal(inside, want_inside)
    if p.size:
        order = np.argsort(p)
        want = order[np.searchsorted(p[order], w[want_inside])]
        np.testing.assert_array_equal(pos, want)  # a repeated id: the search's position (the fallback)
    else:
        assert pos.size == 0


@given(who=st.lists(st.integers(-3, 40), max_size=60), members=st.lists(st.integers(-3, 40), max_size=12),
       big=st.booleans())
@settings(max_examples=200, deadline=None)
def test_members_mask_equals_isin(who: list[int], members: list[int], big: bool) -> None:
    """The annotators section's group masks by a table give `np.isin`'s, for every input: negative ids, ids
    past the table's range (the fallback), repeated members, empty sides."""
    from metrics.core.annotator_permutations import _TABLE_IDS, members_mask

    w = np.asarray(who, dtype=np.int64) + (_TABLE_IDS if big else 0)
    m = np.asarray(members, dtype=np.int64) + (_TABLE_IDS if big else 0)
    np.testing.assert_array_equal(members_mask(w, m), np.isin(w, m))
    np.testing.assert_array_equal(members_mask(w, m.tolist()), np.isin(w, m))
