"""Agreement measures against textbook examples and reference implementations."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from metrics.core.agreement import (
    cohen_kappa,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    krippendorff_alpha,
    percent_agreement,
    percent_agreement_from_counts,
    reliability_matrix,
)

# Wikipedia "Fleiss' kappa" worked example: 10 subjects, 14 raters, 5 categories.
FLEISS_WIKI = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)

_ = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal example:
# 4 observers x 12 units with missing values; alpha = 0.743.
KRIPP_TEXTBOOK = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
        [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
    ]
)


def _long_from_matrix(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ann, item = np.nonzero(~np.isnan(mat))
    return item, ann, mat[ann, item]


def _long_from_counts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    items = np.repeat(np.arange(counts.shape[0]), counts.sum(axis=1))
    labels = np.concatenate([np.repeat(np.arange(counts.shape[1]), row) for row in counts])
    return items, labels


def test_fleiss_wikipedia_example() -> None:
    res = fleiss_kappa_from_counts(FLEISS_WIKI)
    assert round(res.kappa, 3) == 0.210
    assert res.items_used == 10 and res.items_total == 10 and res.raters_per_item == 14
    items, labels = _long_from_counts(FLEISS_WIKI)
    assert fleiss_kappa(items, labels).kappa == pytest.approx(res.kappa, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fleiss_matches_statsmodels_on_random_labels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_items, n_raters, k = 60, 3 + seed, 3
    # correlated raters so kappa is not ~0
    truth = rng.integers(0, k, n_items)
    ratings = np.where(rng.random((n_items, n_raters)) < 0.7, truth[:, None], rng.integers(0, k, (n_items, n_raters)))
    table, _ = aggregate_raters(ratings)
    expected = sm_fleiss_kappa(table, method="fleiss")
    items = np.repeat(np.arange(n_items), n_raters)
    got = fleiss_kappa(items, ratings.ravel())
    assert got.kappa == pytest.approx(expected, abs=1e-12)
    assert got.items_used == n_items


def test_fleiss_uses_only_items_with_modal_number_of_ratings() -> None:
    rng = np.random.default_rng(5)
    ratings = rng.integers(0, 3, (40, 3))
    items = np.repeat(np.arange(40), 3)
    labels = ratings.ravel().astype(float)
    labels[[0, 4, 8]] = np.nan  # items 0, 1, 2 lose one rating each
    res = fleiss_kappa(items, labels)
    assert res.items_used == 37 and res.items_total == 40 and res.raters_per_item == 3
    table, _ = aggregate_raters(ratings[3:])
    assert res.kappa == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


def test_fleiss_degenerate_cases_return_nan_with_reason() -> None:
    one_cat = fleiss_kappa_from_counts(np.array([[3, 0], [3, 0]]))
    assert np.isnan(one_cat.kappa) and "one category" in (one_cat.reason or "")
    single = fleiss_kappa(np.array([0, 1, 2]), np.array(["a", "b", "a"]))
    assert np.isnan(single.kappa) and single.items_used == 0


def test_krippendorff_textbook_example() -> None:
    items, ann, labels = _long_from_matrix(KRIPP_TEXTBOOK)
    for method in ("value_counts", "reliability_data"):
        res = krippendorff_alpha(items, ann, labels, method=method)  # type: ignore[arg-type]
        assert round(res.alpha, 3) == 0.743
    assert res.items_pairable == 11 and res.items_total == 12  # unit 12 has one value
    assert res.values_pairable == 40


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_krippendorff_matches_package_on_random_data_with_missing(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_ann, n_items, k = 6, 50, 3
    truth = rng.integers(0, k, n_items)
    mat = np.where(rng.random((n_ann, n_items)) < 0.75, truth, rng.integers(0, k, (n_ann, n_items))).astype(float)
    mat[rng.random(mat.shape) < 0.4] = np.nan
    direct = krippendorff.alpha(reliability_data=mat, level_of_measurement="nominal")
    items, ann, labels = _long_from_matrix(mat)
    # string labels and arbitrary ids must not matter
    str_labels = np.array(["F", "M", "C"], dtype=object)[labels.astype(int)]
    a1 = krippendorff_alpha(items * 7 + 3, ann, str_labels, method="value_counts")
    a2 = krippendorff_alpha(items, ann, labels, method="reliability_data")
    assert a1.alpha == pytest.approx(direct, abs=1e-10)
    assert a2.alpha == pytest.approx(direct, abs=1e-10)


def test_krippendorff_degenerate_cases() -> None:
    no_pairs = krippendorff_alpha(np.array([0, 1]), np.array([0, 0]), np.array(["a", "b"]))
    assert np.isnan(no_pairs.alpha) and no_pairs.items_pairable == 0 and no_pairs.reason
    one_cat = krippendorff_alpha(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array(["a"] * 4))
    assert np.isnan(one_cat.alpha) and "single category" in (one_cat.reason or "")


def test_reliability_matrix_rejects_duplicate_answers() -> None:
    with pytest.raises(ValueError):
        reliability_matrix(np.array([0, 0]), np.array([1, 1]), np.array(["a", "b"]))


def test_cohen_kappa_hand_example_and_sklearn() -> None:
    # Hand example: 50 pairs, 20 yes/yes, 15 no/no, 5 yes/no, 10 no/yes.
    # p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4.
    a = np.array(["yes"] * 20 + ["no"] * 15 + ["yes"] * 5 + ["no"] * 10)
    b = np.array(["yes"] * 20 + ["no"] * 15 + ["no"] * 5 + ["yes"] * 10)
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)
    rng = np.random.default_rng(11)
    x = rng.choice(["F", "M", "C"], 300)
    y = np.where(rng.random(300) < 0.6, x, rng.choice(["F", "M", "C"], 300))
    assert cohen_kappa(x, y) == pytest.approx(cohen_kappa_score(x, y), abs=1e-12)


def test_cohen_kappa_drops_missing_pairs() -> None:
    a = np.array(["F", "M", None, "F"], dtype=object)
    b = np.array(["F", "M", "F", None], dtype=object)
    assert cohen_kappa(a, b) == pytest.approx(1.0)


def test_percent_agreement_hand_example() -> None:
    # item 0: 3 agree -> 1; item 1: 2 of 3 agree -> 1/3; item 2: single rating -> ignored
    items = np.array([0, 0, 0, 1, 1, 1, 2])
    labels = np.array(["F", "F", "F", "F", "F", "M", "M"])
    assert percent_agreement(items, labels) == pytest.approx((1 + 1 / 3) / 2)
    assert np.isnan(percent_agreement_from_counts(np.array([[1, 0]])))
