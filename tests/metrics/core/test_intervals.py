"""Interval functions: BCa against scipy, containment of the estimate, closed forms."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import stats

from metrics.core import draws, gep, pst, uncertainty
from metrics.core import intervals as iv
from metrics.core import metric_intervals as mi

from .conftest import REFERENCE_DIR


def test_bca_matches_scipy_bootstrap_bca_within_monte_carlo_error() -> None:
    rng = np.random.default_rng(1)
    y, w = rng.exponential(size=70), rng.integers(1, 4, size=70).astype(float)
    ci = iv.cluster_bca(np.stack([y * w, w], 1), lambda t: t[:, 0] / t[:, 1], n_boot=20000, seed=1)
    ref = stats.bootstrap((y * w, w), lambda a, b, axis: a.sum(axis) / b.sum(axis), paired=True, vectorized=True,
                          n_resamples=20000, method="BCa", rng=np.random.default_rng(2)).confidence_interval
    assert ci.method == "bca-cluster" and ci.n_clusters == 70
    assert ci.low == pytest.approx(ref.low, rel=0.02) and ci.high == pytest.approx(ref.high, rel=0.02)
    # two independent samples (strata): the multi-sample jackknife acceleration, as scipy
    a, b = rng.normal(0.3, 1, 40), rng.gamma(2.0, 1.0, 55)
    sums = np.concatenate([np.stack([a, np.ones(40)], 1), np.stack([b, np.ones(55)], 1)])
    strata = np.r_[np.zeros(40, int), np.ones(55, int)]
    ci2 = iv.stratified_cluster_bca(sums, lambda t: t[:, 0, 0] / t[:, 0, 1] - t[:, 1, 0] / t[:, 1, 1], strata,
                                    n_boot=20000, seed=3)
    ref2 = stats.bootstrap((a, b), lambda x, z, axis: x.mean(axis) - z.mean(axis), vectorized=True,
                           n_resamples=20000, method="BCa", rng=np.random.default_rng(4)).confidence_interval
    assert ci2.low == pytest.approx(ref2.low, abs=0.03) and ci2.high == pytest.approx(ref2.high, abs=0.03)
    assert ci2.estimate == pytest.approx(a.mean() - b.mean())


def test_bca_is_seeded_and_degenerate_input_gives_the_point() -> None:
    sums = np.stack([np.r_[np.ones(30), np.zeros(10)], np.ones(40)], 1)
    a = iv.cluster_bca(sums, lambda t: t[:, 0] / t[:, 1], n_boot=500, seed=7)
    b = iv.cluster_bca(sums, lambda t: t[:, 0] / t[:, 1], n_boot=500, seed=7)
    assert (a.low, a.high) == (b.low, b.high) and a.low < 0.75 < a.high
    const = iv.cluster_bca(np.stack([np.ones(20), np.ones(20)], 1), lambda t: t[:, 0] / t[:, 1], n_boot=200)
    assert const.low == const.high == const.estimate == 1.0 and not const.extended


def test_bca_endpoints_keep_the_estimate_inside_and_say_so() -> None:
    # every draw above the estimate (a biased statistic near a boundary): BCa alone would exclude it
    draws = np.linspace(0.3, 0.5, 1000)[:, None]
    jack = np.linspace(0.2, 0.21, 50)[:, None]
    lo, hi, ext = iv.bca_endpoints(np.array([0.2]), draws, jack)
    assert lo[0] == pytest.approx(0.2) and hi[0] >= 0.2 and bool(ext[0])
    lo, hi, ext = iv.bca_endpoints(np.array([0.4]), draws, jack)
    assert lo[0] < 0.4 < hi[0] and not ext[0]


def test_design_effect_is_one_for_independent_rows_and_grows_with_clustering() -> None:
    rng = np.random.default_rng(0)
    y = (rng.random(400) < 0.4).astype(float)
    assert iv.design_effect(np.arange(400), y) == pytest.approx(1.0)
    # 100 images of 4 persons who all share one label: deff -> 4
    shared = np.repeat((rng.random(100) < 0.4).astype(float), 4)
    assert iv.design_effect(np.repeat(np.arange(100), 4), shared) == pytest.approx(4.0, rel=0.02)
    per = iv.design_effect(np.repeat(np.arange(100), 4), shared, None, np.tile(["a", "b", "c", "d"], 100))
    assert per == pytest.approx(np.ones(4))  # each identity appears once per image


def test_wilson_and_newcombe_come_from_statsmodels_and_contain_the_estimate() -> None:
    from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

    lo, hi = iv.wilson_interval([0, 3, 40], [40, 40, 40])
    exp = proportion_confint(np.array([0, 3, 40]), np.array([40, 40, 40]), method="wilson")
    assert np.allclose(lo, np.minimum(exp[0], [0, 3 / 40, 1])) and np.allclose(hi, np.maximum(exp[1], [0, 3 / 40, 1]))
    assert lo[0] == 0.0 and hi[2] == 1.0
    lo2, hi2 = iv.wilson_interval([10], [40], deff=2.0)
    assert hi2[0] - lo2[0] > hi[1] - lo[1] and lo2[0] <= 0.25 <= hi2[0]
    nlo, nhi = iv.newcombe_interval([1, 12], [80, 80], [1, 3], [80, 80])
    elo, ehi = confint_proportions_2indep(np.array([1, 12]), 80, np.array([1, 3]), 80, method="newcomb")
    assert np.allclose(nlo, elo) and np.allclose(nhi, ehi) and nlo[0] < 0 < nhi[0]


def test_sts_interval_is_bca_around_the_report_estimate() -> None:
    rng = np.random.default_rng(5)
    n = 300
    stereo = np.tile(["masculine", "feminine"], n)
    lab = np.where(rng.random(2 * n) < 0.7, np.char.capitalize(stereo), "Cannot identify")
    img = np.repeat(np.arange(n), 2)
    ci = mi.sts_interval(img, lab, stereo, n_boot=1000, seed=1)
    old = uncertainty.sts_bootstrap_ci(img, lab, stereo, n_boot=1000, seed=1)
    assert ci.estimate == pytest.approx(pst.overall_sts(lab, stereo)) == pytest.approx(old.estimate)
    assert ci.low < ci.estimate < ci.high and abs((ci.high - ci.low) - (old.high - old.low)) < 2.0
    ex = mi.sts_interval(img, lab, stereo, "excluded", n_boot=500)
    assert ex.estimate == 100.0  # every determined person is stereotyped


def test_micro_group_and_percent_feminine_intervals() -> None:
    rng = np.random.default_rng(2)
    ids = np.repeat(np.array(["nurse", "pilot"]), 40)
    groups = np.where(ids == "nurse", "female", "male")
    stereo = np.where(ids == "nurse", "feminine", "masculine")
    lab = np.where(rng.random(80) < 0.75, np.char.capitalize(stereo), np.where(ids == "nurse", "Masculine", "Feminine"))
    img = np.arange(80)
    micro = mi.micro_sts_intervals(img, ids, lab, stereo)
    exp = pst.micro_sts(ids, lab, stereo)
    for k, c in micro.items():
        assert c.estimate == pytest.approx(exp[k]) and c.low <= c.estimate <= c.high and c.method == "wilson-deff"
        assert c.notes["persons"] == 40 and c.notes["deff"] == pytest.approx(1.0)
    pf = mi.percent_feminine_intervals(img, ids, lab)
    assert pf["nurse"].estimate == pytest.approx(pst.percent_feminine(ids, lab)["nurse"])
    grp = mi.group_sts_intervals(img, ids, groups, lab, stereo, n_boot=500)
    assert grp["female"].estimate == pytest.approx(exp["nurse"]) and grp["female"].low < grp["female"].high


def _cogview2_neutral_rows() -> dict[str, np.ndarray]:
    """The GEP paper's CogView2 neutral counts (Table 11, 80 images per gender), as labels."""
    t = json.loads((REFERENCE_DIR / "gep_tables.json").read_text())
    attrs, freq = t["attributes"], t["table11_neutral_frequencies"]["CogView2"]
    img, g, a, lab = [], [], [], []
    for gi, (gender, key) in enumerate((("A woman", "women"), ("A man", "men"))):
        for j, attr in enumerate(attrs):
            k = round(freq[key][j] * 80)
            for i in range(80):
                img.append(gi * 80 + i)
                g.append(gender)
                a.append(attr)
                lab.append("yes" if (i + 11 * j) % 80 < k else "no")
    return {"image_ids": np.array(img), "genders": np.array(g), "attributes": np.array(a), "labels": np.array(lab),
            "attrs": attrs}


def test_gep_score_interval_contains_the_estimate_where_the_percentile_one_does_not() -> None:
    """CogView2's neutral counts give GEP 0.0233 - the authors' real-data case where today's
    percentile interval was [0.0248, 0.0534] and excluded it."""
    d = _cogview2_neutral_rows()
    res = mi.gep_intervals(d["image_ids"], d["genders"], d["attributes"], d["labels"], ["A woman", "A man"],
                           d["attrs"], n_boot=2000, seed=0)
    rep = gep.gep_report(d["genders"], d["attributes"], d["labels"], ["A woman", "A man"], d["attrs"])
    sc = res["score"]
    assert sc.estimate == pytest.approx(rep["score"]) and round(sc.estimate, 4) == 0.0233
    assert sc.method == "gep-test-inversion" and sc.low <= sc.estimate <= sc.high
    assert sc.low == 0.0  # the data are compatible with no difference at all
    # today's percentile interval of the same statistic lies above the estimate
    order = d["attrs"]
    g = (d["genders"] == "A man").astype(int)
    pos = {a: j for j, a in enumerate(order)}
    cells = g * len(order) + np.array([pos[a] for a in d["attributes"]])
    vals = np.zeros((cells.size, 4 * len(order)))
    vals[np.arange(cells.size), 2 * cells] = (d["labels"] == "yes")
    vals[np.arange(cells.size), 2 * cells + 1] = 1.0

    def stat(t: np.ndarray) -> np.ndarray:
        f = t[:, 0::2] / t[:, 1::2]
        return np.abs(f[:, :15] - f[:, 15:]).mean(axis=1)

    old = uncertainty.cluster_bootstrap(d["image_ids"], vals, stat, n_boot=2000, seed=0)
    assert old.low > old.estimate  # the flaw this module fixes
    # components: Newcombe, and the dress gap (0.14) is clearly positive
    assert res["vector"]["dress"].low > 0 and res["vector"]["slippers"].low < 0 < res["vector"]["slippers"].high
    assert res["frequencies"]["A woman"]["dress"].notes == {"present": 11, "total": 80}


def test_abs_mean_interval_away_from_zero_is_close_to_the_normal_interval() -> None:
    rng = np.random.default_rng(4)
    v = np.array([0.4, -0.3, 0.5, 0.35])
    draws = v + rng.normal(0, 0.02, size=(4000, 4))
    ci = mi.abs_mean_interval(v, draws)
    se = 0.02 / 2  # sd of the mean of 4 independent |v_j|
    assert ci.low == pytest.approx(0.3875 - 1.96 * se, abs=0.003) and ci.high == pytest.approx(0.3875 + 1.96 * se,
                                                                                               abs=0.003)
    assert not ci.extended and ci.notes["components"] == 4
    nan = mi.abs_mean_interval([np.nan, 0.1], np.c_[np.full(100, np.nan), 0.1 + rng.normal(0, 0.01, 100)])
    assert nan.notes["components"] == 1 and nan.estimate == pytest.approx(0.1)


def test_shared_draws_keep_a_large_matrix_from_its_second_request_with_the_same_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside one scope a (seed, draws, strata sizes) asked for twice is kept and served from then on,
    whatever its size; the draws are the ones made without the scope; the least recently used go first
    over the byte limit and a matrix over it is never kept; a nested scope is the outer one; outside,
    nothing is kept."""
    monkeypatch.setattr(draws, "_CACHED_CELLS", 0)
    rng = np.random.default_rng(4)
    sums = rng.integers(0, 5, size=(300, 4)).astype(float)
    strata = rng.integers(0, 2, 300)
    alone = iv.stratified_cluster_draws(sums, strata, 200, seed=9)
    with draws.shared_draws() as scope:
        first = iv.stratified_cluster_draws(sums, strata, 200, seed=9)
        assert not scope.kept  # one request: noted, not kept
        again = iv.stratified_cluster_draws(sums * 2, strata, 200, seed=9)  # other sums, the same images
        with draws.shared_draws() as inner:
            assert inner is scope
            third = iv.stratified_cluster_draws(sums, strata, 200, seed=9)
        other_seed = iv.stratified_cluster_draws(sums, strata, 200, seed=10)
    np.testing.assert_array_equal(first, alone)
    np.testing.assert_array_equal(again, 2 * alone)
    np.testing.assert_array_equal(third, alone)
    assert not np.array_equal(other_seed, alone)
    assert (scope.drawn, scope.reused) == (3, 1)
    assert draws._SHARED.get() is None
    one = sum(b.nbytes for blocks in draws._multiplicities_drawn(9, 200, (300,)) for b in blocks)
    outside = {seed: iv.stratified_cluster_draws(sums, None, 200, seed=seed) for seed in (1, 2)}
    with draws.shared_draws(max_bytes=one) as small:  # room for one: the newest kept, the older dropped
        for seed in (1, 1, 2, 2, 1, 1):
            np.testing.assert_array_equal(iv.stratified_cluster_draws(sums, None, 200, seed=seed), outside[seed])
        assert list(small.kept) == [(1, 200, (300,))]
        assert (small.drawn, small.reused) == (5, 1)
    with draws.shared_draws(max_bytes=one - 1) as tiny:  # too large to keep: drawn every time
        for _ in range(3):
            iv.stratified_cluster_draws(sums, None, 200, seed=3)
        assert (tiny.drawn, tiny.reused, len(tiny.kept)) == (3, 0, 0)
    # Kept matrices are read-only: a caller cannot change another's draws.
    with draws.shared_draws() as ro:
        iv.stratified_cluster_draws(sums, None, 50, seed=3)
        iv.stratified_cluster_draws(sums, None, 50, seed=3)
        block = next(iter(ro.kept.values()))[0][0]
        with pytest.raises(ValueError):
            block[0, 0] = 7


def test_gep_report_and_intervals_given_the_frequencies_are_the_same() -> None:
    """The report's GEP section computes the frequencies once and hands them to both: the same figures
    as each computing its own; other frequencies do change them (the argument is read)."""
    d = _cogview2_neutral_rows()
    args = (d["genders"], d["attributes"], d["labels"], ["A woman", "A man"], d["attrs"])
    fr = gep.attribute_frequencies(*args)
    assert gep.gep_report(*args, frequencies=fr) == gep.gep_report(*args)
    given = mi.gep_intervals(d["image_ids"], *args, n_boot=300, seed=0, frequencies=fr)
    own = mi.gep_intervals(d["image_ids"], *args, n_boot=300, seed=0)
    assert repr(given) == repr(own)
    other = gep.attribute_frequencies(d["genders"], d["attributes"], np.where(d["labels"] == "yes", "no", "yes"),
                                      ["A woman", "A man"], d["attrs"])
    assert gep.gep_report(*args, frequencies=other)["score"] != gep.gep_report(*args)["score"]
    assert mi.gep_intervals(d["image_ids"], *args, n_boot=300, seed=0, frequencies=other)["score"].estimate \
        != own["score"].estimate


def test_multiplicities_counted_draw_by_draw_equal_one_bincount_per_block() -> None:
    """From `_ROW_BINCOUNT` clusters on, a block's draws are counted one draw at a time: the matrices are
    the ones a single bincount over the whole block gives (the reference below, the code before the
    change), on both sides of the threshold and over several blocks, so no seed's draws moved."""
    from metrics.core import draws

    def one_bincount(seed: int, n_boot: int, sizes: tuple[int, ...]) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        out = []
        for n in sizes:
            for m in draws.draw_blocks(n_boot, n):
                idx = rng.integers(0, n, size=(m, n))
                idx += (np.arange(m) * n)[:, None]
                out.append(np.bincount(idx.ravel(), minlength=m * n).reshape(m, n))
        return out

    threshold = draws._ROW_BINCOUNT
    sizes = (threshold - 1, 7, threshold, 3 * threshold + 5)
    n_boot = 2 * (draws._BLOCK_CELLS // sizes[-1]) + 3  # the largest stratum in three blocks
    got = [b for blocks in draws._multiplicities_drawn(4, n_boot, sizes) for b in blocks]
    want = one_bincount(4, n_boot, sizes)
    assert len(got) == len(want) and len(list(draws.draw_blocks(n_boot, sizes[-1]))) == 3
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == np.uint8  # the narrowest type that holds the counts, as before
        assert (g.sum(axis=1) == g.shape[1]).all()


def test_multiplicities_past_the_narrow_rows_are_counted_the_wide_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block whose counts pass `_NARROW_MAX` is counted again into a wide matrix: the same counts and the
    same narrowest type (lowered here so that every block of the large stratum passes it)."""
    from metrics.core import draws

    sizes = (draws._ROW_BINCOUNT + 11,)
    want = [b.copy() for blocks in draws._multiplicities_drawn(8, 30, sizes) for b in blocks]
    monkeypatch.setattr(draws, "_NARROW_MAX", 2)
    got = [b for blocks in draws._multiplicities_drawn(8, 30, sizes) for b in blocks]
    assert any(int(w.max()) > 2 for w in want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype == np.uint8


@settings(max_examples=200, deadline=None)
@given(hs.integers(1, 2 ** 31 - 1), hs.integers(0, 2 ** 32 - 1), hs.integers(1, 4), hs.integers(1, 9))
def test_int32_draws_are_the_int64_draws(n: int, seed: int, rows: int, cols: int) -> None:
    """`_multiplicities_drawn` draws its cluster indexes as int32: numpy gives the int64 draws' values
    for every range under 2**31 (the same 32-bit bounded steps), so no seed's draws moved."""
    wide = np.random.default_rng(seed).integers(0, n, size=(rows, cols))
    narrow = np.random.default_rng(seed).integers(0, n, size=(rows, cols), dtype=np.int32)
    np.testing.assert_array_equal(narrow, wide)


@pytest.mark.parametrize("integer", [True, False], ids=["counts", "weights"])
def test_stratified_draws_skip_a_stratums_zero_columns_with_the_same_totals(integer: bool) -> None:
    """Each stratum multiplies only its columns with a nonzero sum (a GEP image's cells are its own
    gender's): the totals equal the full product of the same multiplicities, and the skipped columns
    are exactly 0 in every draw; a stratum with no nonzero column at all, too."""
    rng = np.random.default_rng(5)
    n = (3000, 40, 25)
    codes = np.repeat(np.arange(3), n)
    sums = rng.integers(0, 4, size=(sum(n), 6)).astype(float)
    if not integer:
        sums *= rng.random(sums.shape)
    sums[codes == 0, 3:] = 0.0  # stratum 0: the last three columns only
    sums[codes == 1, :3] = 0.0  # stratum 1: the first three
    sums[codes == 2] = 0.0      # stratum 2: nothing
    got = iv.stratified_cluster_draws(sums, codes, 300, seed=8)
    mult = draws.multiplicities(8, 300, n)
    for st in range(3):
        want = np.concatenate([b.astype(float) for b in mult[st]]) @ sums[codes == st]
        if integer:
            np.testing.assert_array_equal(got[:, st, :], want)
        else:
            np.testing.assert_allclose(got[:, st, :], want, rtol=1e-12, atol=0)
    assert not got[:, 0, 3:].any() and not got[:, 1, :3].any() and not got[:, 2, :].any()
    assert got[:, 0, :3].all() and got[:, 1, 3:].all()
