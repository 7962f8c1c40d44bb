"""Agreement per subset, pooled over campaigns, and alpha's interval."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.core import agreement
from metrics.core import agreement_subsets as ags


def noisy_counts(rng: np.random.Generator, n: int, prevalence: float, accuracy: float, raters: int = 3,
                 missing: float = 0.0) -> np.ndarray:
    """Binary questions: true class with `prevalence`, each rater right with `accuracy`, some
    answers missing."""
    truth = rng.random(n) < prevalence
    right = rng.random((n, raters)) < accuracy
    yes = np.where(right, truth[:, None], ~truth[:, None])
    present = rng.random((n, raters)) >= missing
    return np.stack([((~yes) & present).sum(1), (yes & present).sum(1)], axis=1)


def test_pooled_alpha_is_alpha_on_the_stacked_questions_not_the_mean() -> None:
    rng = np.random.default_rng(0)
    mats = {"CogView2": noisy_counts(rng, 300, 0.06, 0.93), "DALLE-2": noisy_counts(rng, 300, 0.5, 0.93),
            "Stable Diffusion": noisy_counts(rng, 300, 0.2, 0.93, missing=0.1)}
    res = ags.pooled_alpha(mats)
    stacked = np.concatenate(list(mats.values()))
    assert res["pooled"]["alpha"] == pytest.approx(krippendorff.alpha(value_counts=stacked,
                                                                      level_of_measurement="nominal"))
    for k, m in mats.items():
        assert res["by_campaign"][k]["alpha"] == pytest.approx(agreement.krippendorff_alpha_from_counts(m).alpha)
    assert res["pooled"]["items_total"] == 900
    assert abs(res["pooled"]["alpha"] - res["mean_of_campaigns"]) > 0.01  # pooling is not averaging
    with pytest.raises(ValueError, match="same choices"):
        ags.pooled_alpha({"a": np.ones((3, 2)), "b": np.ones((3, 3))})


def test_agreement_by_group_equals_the_functions_on_each_subset() -> None:
    rng = np.random.default_rng(1)
    counts = np.concatenate([noisy_counts(rng, 200, 0.3, 0.95), noisy_counts(rng, 200, 0.3, 0.7)])
    attrs = np.repeat(["dress", "jeans"], 200)
    res = ags.agreement_by_group(counts, attrs)
    for name, sl in (("dress", slice(0, 200)), ("jeans", slice(200, 400))):
        assert res[name]["fleiss_kappa"] == pytest.approx(agreement.fleiss_kappa_from_counts(counts[sl]).kappa)
        assert res[name]["krippendorff_alpha"] == pytest.approx(
            agreement.krippendorff_alpha_from_counts(counts[sl]).alpha)
        assert res[name]["questions"] == 200 and res[name]["answers"] == 600
    assert res["dress"]["krippendorff_alpha"] > res["jeans"]["krippendorff_alpha"] + 0.3  # the ambiguous attribute
    assert ags.agreement_summary(np.zeros((2, 2)))["note"] == "no answered question"


def test_alpha_interval_matches_the_package_and_covers() -> None:
    rng = np.random.default_rng(2)
    counts = noisy_counts(rng, 400, 0.3, 0.93, missing=0.1)
    ci = ags.alpha_interval(counts, n_boot=1000, seed=1)
    assert ci.estimate == pytest.approx(agreement.krippendorff_alpha_from_counts(counts).alpha)
    assert ci.low < ci.estimate < ci.high and ci.method == "bca-cluster"
    # three-category data too (PST: Feminine / Masculine / Cannot identify)
    three = np.stack([rng.multinomial(3, [0.6, 0.35, 0.05]) for _ in range(200)])
    assert ags.alpha_interval(three, n_boot=200).estimate == pytest.approx(
        krippendorff.alpha(value_counts=three, level_of_measurement="nominal"))
    # clustered questions (15 per image) widen the interval
    img = np.repeat(np.arange(40), 10)
    shared = np.repeat(noisy_counts(rng, 40, 0.3, 0.9), 10, axis=0)
    flat, clus = ags.alpha_interval(shared, n_boot=500), ags.alpha_interval(shared, img, n_boot=500)
    assert clus.high - clus.low > 2 * (flat.high - flat.low)


def _rows_reference(counts: np.ndarray) -> np.ndarray:
    """The per-question coincidence rows as first written (every question, then a mask)."""
    c = counts.astype(float)
    m = c.sum(axis=1)
    k = c.shape[1]
    pair = c[:, :, None] * c[:, None, :] - np.eye(k)[None] * c[:, :, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        pair = np.where((m >= 2)[:, None, None], pair / np.where(m >= 2, m - 1, 1)[:, None, None], 0.0)
    return pair.reshape(c.shape[0], k * k)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.lists(st.lists(st.integers(0, 6), min_size=4, max_size=4), min_size=0, max_size=40))
def test_coincidence_rows_and_total_for_every_count_matrix(k: int, table: list[list[int]]) -> None:
    """The rows (only the questions with two answers or more computed) are the reference's to the bit; the
    total (one product, no rows) their sum to float rounding; alpha from it is the package's."""
    counts = np.asarray(table, dtype=np.int64).reshape(-1, 4)[:, :k]
    rows = ags._coincidence_rows(counts)
    assert rows.shape == (counts.shape[0], k * k)
    np.testing.assert_array_equal(rows, _rows_reference(counts))
    total = ags.coincidence_total(counts)
    np.testing.assert_allclose(total, rows.sum(axis=0), rtol=1e-12, atol=1e-12)
    pairable = counts[counts.sum(axis=1) >= 2]
    if k >= 2 and pairable.size and len(np.unique(np.nonzero(pairable)[1])) >= 2:
        assert float(ags.alpha_from_coincidences(total)) == pytest.approx(
            krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal"), abs=1e-9)


def test_alpha_interval_cluster_sums_are_the_add_at_sums() -> None:
    """The per-image sums (one bincount per column) are np.add.at's, to the bit: the interval is unchanged."""
    rng = np.random.default_rng(7)
    counts = noisy_counts(rng, 600, 0.3, 0.9, missing=0.2)
    img = rng.integers(0, 90, 600)
    rows = ags._coincidence_rows(counts)
    ids, codes = np.unique(img, return_inverse=True)
    expected = np.zeros((len(ids), rows.shape[1]))
    np.add.at(expected, codes, rows)
    expected = expected[np.any(expected != 0, axis=1)]
    from metrics.core.intervals import stratified_cluster_bca
    ref = stratified_cluster_bca(expected, lambda t: ags.alpha_from_coincidences(t[:, 0, :]), None, 400, 0.95, 3)
    got = ags.alpha_interval(counts, img, n_boot=400, seed=3)
    assert (got.estimate, got.low, got.high) == (ref.estimate, ref.low, ref.high)
