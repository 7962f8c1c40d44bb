"""The permutation tests of many pairs of groups from answers prepared once (`answers_prepared`, issue 23:
the annotators section's 19 pairs at 10M answers rebuilt each annotator's sums and the answers' pairs per
pair) give the tests built per pair: the same differences, the same p-values, for every input hypothesis
draws (questions with one to five answers, so the exact three-answer path and the direct one both run;
pools with annotators who answered nothing; ids past the lookup table; PST's studentized ratio and GEP's
score, each with alpha)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core.annotator_groups import (
    HeadlineWithAlpha,
    answers_prepared,
    gep_headline,
    group_statistic,
    permutation_test_groups,
    pst_headline,
)
from metrics.core.annotator_permutations import _TABLE_IDS, permuted_differences, pool_positions

PST_CHOICES = ["Cannot identify", "Feminine", "Masculine"]


def _campaign(seed: int, n_q: int, n_ann: int, most: int, big: bool):
    rng = np.random.default_rng(seed)
    per_q = rng.integers(1, most + 1, n_q)
    q = np.repeat(np.arange(n_q), per_q)
    who = np.concatenate([rng.choice(n_ann, p, replace=False) for p in per_q]).astype(np.int64)
    who = who * 7 + (_TABLE_IDS if big else 100)  # database keys, not positions
    return rng, q, who, rng.integers(0, 3, q.size)


def _statistic(kind: str, rng: np.random.Generator, n_q: int):
    settings_ = rng.choice(["single", "paired"], n_q)
    if kind == "pst":
        return HeadlineWithAlpha(pst_headline(PST_CHOICES, rng.choice(["feminine", "masculine"], n_q), settings_,
                                              ["single", "paired"], "paper", unit="answer"))
    return HeadlineWithAlpha(gep_headline(["No", "Yes", "Unsure"], rng.choice(["woman", "man"], n_q),
                                          rng.choice(["dress", "suit", "tie"], n_q), np.full(n_q, "neutral"),
                                          ["neutral"], ["woman", "man"], "absent", unit="answer"))


@given(seed=st.integers(0, 10_000), kind=st.sampled_from(["pst", "gep"]), most=st.integers(2, 5),
       big=st.booleans(), absent=st.integers(0, 2))
@settings(max_examples=60, deadline=None)
def test_prepared_answers_give_every_pairs_test(seed: int, kind: str, most: int, big: bool, absent: int) -> None:
    n_q, n_ann = 90, 24
    rng, q, who, code = _campaign(seed, n_q, n_ann, most, big)
    stat = _statistic(kind, rng, n_q)
    ids = np.unique(who)
    nobody = [int(ids.max()) + 7 * (i + 1) for i in range(absent)]  # members without a single answer
    order = rng.permutation(ids).tolist()
    groups = {"a": order[:6] + nobody, "b": order[6:15], "c": order[15:]}
    prepared = answers_prepared(q, who, code, n_q, 3, stat)
    assert prepared is not None and prepared.pairs is not None
    own = {g: group_statistic(q, who, code, n_q, 3, m, stat) for g, m in groups.items()}
    for x, y in (("a", "b"), ("a", "c"), ("c", "b")):
        kwargs = {"n_perm": 70, "seed": seed, "group_statistics": (own[x], own[y])}
        plain = permutation_test_groups(q, who, code, n_q, 3, groups[x], groups[y], stat, **kwargs)
        fast = permutation_test_groups(q, who, code, n_q, 3, groups[x], groups[y], stat, prepared=prepared, **kwargs)
        for field in ("a", "b", "difference", "p_value"):
            np.testing.assert_array_equal(getattr(fast, field), getattr(plain, field))
        assert fast.studentized == plain.studentized == (1 if kind == "pst" else 0) * 2

        # The permuted differences themselves: the headline's to the bit, alpha's to rounding.
        pool = np.asarray(groups[x] + groups[y], dtype=np.int64)
        inside, pos = pool_positions(who, pool)
        sides = np.stack([rng.permutation(np.arange(pool.size) < len(groups[x])) for _ in range(20)])
        want = permuted_differences(q[inside], code[inside], pos, pool.size, n_q, 3, sides, stat.headline.parts,
                                    True)
        got = prepared.differences(prepared.index(pool), sides)
        np.testing.assert_array_equal(got[:, :-1], want[:, :-1])
        np.testing.assert_allclose(got[:, -1], want[:, -1], rtol=0, atol=1e-12)


def test_the_prepared_answers_are_not_used_where_they_would_differ() -> None:
    """An annotator in both groups (the per-pair path places each answer once), a statistic other than the
    one prepared, or no group figures given: the test is built per pair, as without `prepared`."""
    n_q = 60
    rng, q, who, code = _campaign(3, n_q, 12, 3, False)
    stat, other = _statistic("gep", rng, n_q), _statistic("gep", rng, n_q)
    prepared = answers_prepared(q, who, code, n_q, 3, stat)
    ids = np.unique(who).tolist()
    overlapping, disjoint = (ids[:5], ids[4:]), (ids[:5], ids[5:])  # ids[4] in both groups of the first
    for (a, b), s, given_own in ((overlapping, stat, True), (disjoint, other, True), (disjoint, stat, False)):
        own = (group_statistic(q, who, code, n_q, 3, a, s), group_statistic(q, who, code, n_q, 3, b, s))
        kwargs = {"group_statistics": own} if given_own else {}
        plain = permutation_test_groups(q, who, code, n_q, 3, a, b, s, n_perm=40, seed=1, **kwargs)
        fast = permutation_test_groups(q, who, code, n_q, 3, a, b, s, n_perm=40, seed=1, prepared=prepared, **kwargs)
        np.testing.assert_array_equal(fast.p_value, plain.p_value)
    assert answers_prepared(q, who, code, n_q, 3, lambda counts: counts.sum(axis=0).astype(float)) is None
