"""The paired-minus-single methods of issue 22: the per-identity Newcombe interval with design
effects (defect 1) and the studentized permutation test (defect 2). Coverage and size on simulated
campaigns: tests/bench/test_validity_pst.py."""
from __future__ import annotations

import numpy as np
import pytest

from metrics.core import metric_intervals as mi
from metrics.core.pst import micro_sts
from metrics.core.uncertainty import permutation_test_sts_studentized, permutation_test_studentized


def _side(images: list[int], idents: list[str], labels: list[str]) -> dict[str, np.ndarray]:
    return {"image_ids": np.array(images), "identities": np.array(idents),
            "labels": np.array(labels, dtype=object), "stereotypes": np.array(["feminine"] * len(images), dtype=object)}


def test_micro_gap_interval_holds_the_difference_of_micro_sts() -> None:
    paired = _side(list(range(20)), ["nurse"] * 20, ["Feminine"] * 15 + ["Masculine"] * 4 + ["Cannot identify"])
    single = _side(list(range(100, 112)), ["nurse"] * 12, ["Feminine"] * 6 + ["Masculine"] * 6)
    ci = mi.micro_gap_intervals(paired, single, "paper")["nurse"]
    expected = micro_sts(paired["identities"], paired["labels"], paired["stereotypes"])["nurse"] - micro_sts(
        single["identities"], single["labels"], single["stereotypes"])["nurse"]
    assert ci.estimate == pytest.approx(expected) == 50.0
    assert ci.low < ci.estimate < ci.high and ci.method == "newcombe-deff"
    assert ci.notes["persons_a"] == 20 and ci.notes["persons_b"] == 12
    # An identity on one side only has no interval.
    assert mi.micro_gap_intervals(paired, _side([1], ["doctor"], ["Feminine"]), "paper") == {}


def test_studentized_test_rejects_a_clear_difference_and_not_a_null() -> None:
    rng = np.random.default_rng(3)
    images = np.repeat(np.arange(200), 2)
    group = (np.arange(400) // 2) % 2
    y = rng.random(400) < np.where(group == 1, 0.8, 0.4)
    clear = permutation_test_studentized(images, group, y.astype(float), n_perm=499, seed=1)
    assert clear.p_value < 0.01 and clear.statistic == "studentized"
    assert clear.observed == pytest.approx(y[group == 1].mean() - y[group == 0].mean())
    same = permutation_test_studentized(images, group, np.ones(400), n_perm=99, seed=1)
    assert same.observed == 0.0 and same.p_value == 1.0
    with pytest.raises(ValueError, match="both groups"):
        permutation_test_studentized(images, np.zeros(400), y.astype(float), n_perm=9)


def test_studentized_sts_test_runs_on_person_rows() -> None:
    labels = np.array(["Feminine", "Masculine", "Feminine", "Feminine", "Cannot identify", "Masculine"], dtype=object)
    res = permutation_test_sts_studentized(np.array([1, 1, 2, 2, 3, 4]), np.array([1, 1, 1, 1, 0, 0]), labels,
                                           np.array(["feminine"] * 6, dtype=object), "paper", n_perm=99, seed=0)
    assert res.observed == pytest.approx(50.0 - (-100.0)) and 0 < res.p_value <= 1


def test_compare_sums_without_resampling_gives_the_difference_only() -> None:
    from metrics.core.significance import compare_sums

    a, b = np.array([[1.0, 2.0], [1.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 3.0]])

    def ratio(t: np.ndarray) -> np.ndarray:
        tt = t.sum(axis=1)
        return (tt[:, 0] / tt[:, 1])[:, None]

    d = compare_sums(a, b, ratio, ["r"], n_boot=0, n_perm=0)["r"]
    assert d.difference == pytest.approx(2 / 3 - 1 / 4) and np.isnan(d.low) and d.ci_method == "none"
