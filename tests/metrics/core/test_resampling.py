"""Draws by distinct rows (metrics.core.resampling) have the distributions of the image-by-image
draws: the same moments as the plain bootstrap / permutation, the jackknife equal to
`cluster_jackknife`, the BCa interval close to `stratified_cluster_bca`'s; and Holm equals statsmodels."""
from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from metrics.core import intervals as iv
from metrics.core import resampling as rs
from metrics.core.significance import holm


def _rows(n: int, u: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pat = rng.integers(0, 4, (u, 6)).astype(float)
    return pat[np.r_[np.arange(u), rng.integers(0, u, n - u)]]


@pytest.fixture(params=[1, 10**9], ids=["by-pattern", "image-by-image"])
def ratio(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(rs, "PATTERN_RATIO", request.param)
    return int(request.param)


def test_row_patterns_count_and_rebuild_the_rows() -> None:
    rows = _rows(200, 7)
    pat, inv, cnt = rs.row_patterns(rows)
    assert pat.shape == (7, 6) and cnt.sum() == 200
    np.testing.assert_array_equal(pat[inv], rows)
    np.testing.assert_array_equal(np.bincount(inv, minlength=7), cnt)


def test_bootstrap_totals_have_the_moments_of_resampling_images(ratio: int) -> None:
    rows = np.concatenate([_rows(300, 5, 1), _rows(120, 40, 2)])
    codes = np.r_[np.zeros(300, np.intp), np.ones(120, np.intp)]
    t = rs.bootstrap_totals(rows, codes, 2, 20_000, np.random.default_rng(3))
    assert t.shape == (20_000, 2, 6)
    for st, n in ((0, 300), (1, 120)):
        r = rows[codes == st]
        np.testing.assert_allclose(t[:, st].mean(axis=0), r.sum(axis=0), rtol=0.01)
        # Var of a total of n draws with replacement: n * population variance of a row.
        np.testing.assert_allclose(t[:, st].var(axis=0), n * r.var(axis=0), rtol=0.06)


def test_permutation_totals_split_without_replacement(ratio: int) -> None:
    rows = np.concatenate([_rows(400, 6, 4), np.ones((400, 1))], axis=1)
    n, n_a = 400, 150
    t = rs.permutation_totals(rows, n_a, 20_000, np.random.default_rng(5))
    assert np.all(t[:, -1] == n_a)  # exactly n_A images on side A in every permutation
    np.testing.assert_allclose(t.mean(axis=0), rows.sum(axis=0) * n_a / n, rtol=0.01)
    # Hypergeometric variance: n_A (n - n_A) / (n - 1) * population variance.
    expected = n_a * (n - n_a) / (n - 1) * rows.var(axis=0)
    np.testing.assert_allclose(t[:, :-1].var(axis=0), expected[:-1], rtol=0.06)


def test_pattern_jackknife_equals_the_cluster_jackknife() -> None:
    rows = np.concatenate([_rows(90, 4, 6), _rows(70, 30, 7)])
    codes = np.r_[np.zeros(90, np.intp), np.ones(70, np.intp)]

    def stat(t: np.ndarray) -> np.ndarray:
        return np.stack([t[:, 0, 0] / t[:, 0, 1] - t[:, 1, 2] / t[:, 1, 3], t[:, :, 4].sum(axis=1)], axis=1)

    mine = rs.pattern_jackknife(rows, stat, codes, 2)
    ref = iv.cluster_jackknife(rows, stat, codes)
    for a, b in zip(mine, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_pattern_bca_agrees_with_the_image_by_image_bca() -> None:
    rows = np.concatenate([_rows(800, 10, 8), _rows(800, 12, 9)])
    codes = np.r_[np.zeros(800, np.intp), np.ones(800, np.intp)]

    def stat(t: np.ndarray) -> np.ndarray:
        return t[:, 0, 0] / t[:, 0, 1] - t[:, 1, 0] / t[:, 1, 1]

    mine = rs.pattern_cluster_bca(rows, stat, codes, 4000, 0.95, 1)
    ref = iv.stratified_cluster_bca(rows, stat, codes, 4000, 0.95, 1)
    assert isinstance(ref, iv.CI)
    assert mine.estimate == pytest.approx(ref.estimate, rel=1e-12)
    width = ref.high - ref.low
    assert mine.low == pytest.approx(ref.low, abs=0.05 * width)
    assert mine.high == pytest.approx(ref.high, abs=0.05 * width)
    assert mine.method == "bca-cluster" and mine.n_boot == 4000


@pytest.mark.usefixtures("no_full_gc")
def test_holm_equals_statsmodels() -> None:
    rng = np.random.default_rng(10)
    for size in (1, 2, 15, 40):
        p = rng.random(size) ** 3
        p[: size // 3] = p[0]  # ties
        np.testing.assert_allclose(holm(p), multipletests(p, method="holm")[1], rtol=1e-12)
    p = np.array([0.01, np.nan, 0.04, 0.03])
    out = holm(p)
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2, 3]], multipletests(p[[0, 2, 3]], method="holm")[1])


def test_alpha_interval_by_pattern_agrees_with_by_image() -> None:
    from metrics.core import agreement_subsets as ags

    rng = np.random.default_rng(11)
    truth = rng.integers(0, 2, 600)
    votes = np.where(rng.random((600, 3)) < 0.9, truth[:, None], 1 - truth[:, None])
    counts = np.stack([(votes == 0).sum(axis=1), (votes == 1).sum(axis=1)], axis=1)
    images = np.repeat(np.arange(200), 3)
    plain = ags.alpha_interval(counts, images, n_boot=3000, seed=2)
    mine = ags.alpha_interval(counts, images, n_boot=3000, seed=2, by_pattern=True)
    assert mine.estimate == pytest.approx(plain.estimate, rel=1e-12)
    width = plain.high - plain.low
    assert mine.low == pytest.approx(plain.low, abs=0.06 * width)
    assert mine.high == pytest.approx(plain.high, abs=0.06 * width)
