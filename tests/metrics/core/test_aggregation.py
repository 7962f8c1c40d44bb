"""Majority vote tie policies and Dawid-Skene via crowd-kit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from metrics.core.aggregation import (
    TIE,
    annotator_agreement_with_majority,
    dawid_skene,
    majority_labels_from_counts,
    majority_vote,
    majority_vote_from_counts,
)

ITEMS = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
LABELS = np.array(
    ["F", "F", "M", "F", "M", "C", "M", "M", "M", "F", "M", None], dtype=object
)  # item 1: 1-1-1 tie; item 3: 1-1 tie after a missing answer


def test_majority_vote_tie_policy_tie() -> None:
    res = majority_vote(ITEMS, LABELS)
    assert res.as_dict() == {0: "F", 1: TIE, 2: "M", 3: TIE}
    assert res.is_tie.tolist() == [False, True, False, True]
    assert res.n_ties == 2
    assert res.counts is not None and res.counts.sum() == 11  # missing answer not counted


def test_majority_vote_tie_policy_first_and_random() -> None:
    first = majority_vote(ITEMS, LABELS, tie_policy="first", categories=["M", "F", "C"])
    assert first.as_dict() == {0: "F", 1: "M", 2: "M", 3: "M"}
    assert first.n_ties == 2  # still reported
    r1 = majority_vote(ITEMS, LABELS, tie_policy="random", seed=3).as_dict()
    r2 = majority_vote(ITEMS, LABELS, tie_policy="random", seed=3).as_dict()
    assert r1 == r2
    assert r1[1] in {"F", "M", "C"} and r1[3] in {"F", "M"}
    # over many seeds a tie between F and M resolves both ways
    seen = {majority_vote(ITEMS, LABELS, tie_policy="random", seed=s).as_dict()[3] for s in range(30)}
    assert seen == {"F", "M"}


def test_majority_vote_rejects_unknown_label_when_categories_given() -> None:
    with pytest.raises(ValueError):
        majority_vote(ITEMS, LABELS, categories=["F", "M"])


def test_annotator_agreement_with_majority() -> None:
    items = np.array([0, 0, 0, 1, 1, 1])
    ann = np.array(["a", "b", "c", "a", "b", "c"])
    labels = np.array(["F", "F", "M", "M", "M", "M"])
    res = annotator_agreement_with_majority(items, ann, labels)
    assert res["a"]["agreement"] == 1.0 and res["c"]["agreement"] == 0.5
    assert res["c"]["n_compared"] == 2


def test_dawid_skene_recovers_truth_and_discounts_a_spammer() -> None:
    rng = np.random.default_rng(0)
    n_items = 120
    truth = rng.choice(["F", "M"], n_items)
    other = np.where(truth == "F", "M", "F")
    good = [np.where(rng.random(n_items) < 0.9, truth, other) for _ in range(3)]
    spam = [rng.choice(["F", "M"], n_items) for _ in range(4)]  # four random clickers
    answers = good + spam
    items = np.tile(np.arange(n_items), len(answers))
    annotators = np.repeat(np.arange(len(answers)), n_items)
    labels = np.concatenate(answers)
    ds = dawid_skene(items, annotators, labels, seed=0)
    mv = majority_vote(items, labels, tie_policy="first")
    ds_acc = np.mean(ds.labels == truth)
    mv_acc = np.mean(mv.labels == truth)
    assert ds.proba is not None and np.allclose(ds.proba.sum(axis=1), 1.0)
    assert ds_acc > 0.9
    assert ds_acc > mv_acc  # four random clickers often outvote three good raters under majority vote


@given(data=st.data(), k=st.integers(1, 5), rows=st.integers(0, 60))
@settings(max_examples=300, deadline=None)
def test_majority_labels_from_counts_equal_the_object_path(data: st.DataObject, k: int, rows: int) -> None:
    """The report's labels (text from codes) are `majority_vote_from_counts`'s with the tie policy "tie" and
    "" for no vote, as strings: every count matrix (ties, unanswered rows), and category names that are
    themselves "tie" or "" or longer than any other."""
    counts = data.draw(hnp.arrays(np.int64, (rows, k), elements=st.integers(0, 3)))
    names = data.draw(st.lists(st.sampled_from(["yes", "no", "Cannot identify", "tie", "", "A", "é"]), min_size=k,
                               max_size=k, unique=True))
    labels, ties = majority_labels_from_counts(counts, names, missing_value="")
    want, want_ties = majority_vote_from_counts(counts, names, tie_policy="tie", missing_value="")
    assert labels.tolist() == want.astype(str).tolist()
    np.testing.assert_array_equal(ties, want_ties)
    assert labels.dtype.kind == "U"
