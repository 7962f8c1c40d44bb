"""Differences between campaigns / settings: permutation test size and power, BCa interval of a
difference, Holm adjustment, PST / GEP / gap comparisons."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from metrics.core import gep, pst
from metrics.core import significance as sig


def person_side(rng: np.random.Generator, n_images: int, p: float, persons: int = 1, corr: float = 0.0
                ) -> dict[str, np.ndarray]:
    """n_images images of `persons` persons (alternating masculine / feminine stereotypes), each
    stereotyped with probability p, moved by +-corr for all persons of an image at once."""
    image = np.repeat(np.arange(n_images), persons)
    stereo = np.tile(np.array(["masculine", "feminine"]), n_images * persons)[: n_images * persons]
    shift = np.where(rng.random(n_images) < 0.5, corr, -corr)[image]
    hit = rng.random(image.size) < p + shift
    lab = np.where(hit, np.char.capitalize(stereo), np.where(stereo == "masculine", "Feminine", "Masculine"))
    ident = np.where(stereo == "masculine", "pilot", "nurse")
    return {"image_ids": image, "identities": ident, "labels": lab, "stereotypes": stereo}


def _overall_stat(t: np.ndarray) -> np.ndarray:
    tt = t.sum(axis=1)
    return (100.0 * tt[:, 0] / tt[:, 1])[:, None]


def _sums(side: dict[str, np.ndarray]) -> np.ndarray:
    return sig.pst_image_sums(side["image_ids"], side["identities"], side["labels"], side["stereotypes"],
                              ["nurse", "pilot"])[:, :2] + sig.pst_image_sums(
        side["image_ids"], side["identities"], side["labels"], side["stereotypes"], ["nurse", "pilot"])[:, 2:]


def test_permutation_test_has_its_size_on_null_data() -> None:
    """400 null comparisons (both sides from one model, 2 correlated persons per image): the
    share of p <= 0.05 is within binomial error of 0.05, and no level is exceeded."""
    rng = np.random.default_rng(11)
    ps = []
    for _ in range(400):
        a, b = person_side(rng, 60, 0.6, persons=2, corr=0.2), person_side(rng, 60, 0.6, persons=2, corr=0.2)
        sa, sb = _sums(a), _sums(b)
        _, p = sig.stratified_permutation_pvalues(np.concatenate([sa, sb]), np.r_[np.zeros(60), np.ones(60)], None,
                                                  _overall_stat, n_perm=199, seed=int(rng.integers(2**31)))
        ps.append(p[0])
    ps = np.array(ps)
    assert 0.025 <= np.mean(ps <= 0.05) <= 0.075
    for level in (0.01, 0.1, 0.2):  # valid at other levels too (the STS lattice makes p discrete)
        assert np.mean(ps <= level) <= level + 2.5 * np.sqrt(level * (1 - level) / 400)
    assert ps.min() >= 1 / 200  # never 0


def test_permutation_test_power_matches_the_normal_approximation() -> None:
    """Shifted alternative: STS 30 vs 0 points, 150 independent persons per side. Two-sample
    z-test power = Phi(delta / SE - 1.96) = 0.76; the permutation test's simulated power is
    within 0.07 of it."""
    rng = np.random.default_rng(12)
    pa, pb, n = 0.65, 0.5, 150
    se = 200 * np.sqrt(pa * (1 - pa) / n + pb * (1 - pb) / n)
    analytic = stats.norm.cdf(abs(200 * (pa - pb)) / se - 1.96)
    rejections = 0
    for _ in range(400):
        a, b = person_side(rng, n, pa), person_side(rng, n, pb)
        _, p = sig.stratified_permutation_pvalues(np.concatenate([_sums(a), _sums(b)]), np.r_[np.zeros(n), np.ones(n)],
                                                  None, _overall_stat, n_perm=199, seed=int(rng.integers(2**31)))
        rejections += p[0] <= 0.05
    assert analytic == pytest.approx(0.76, abs=0.01)
    assert abs(rejections / 400 - analytic) <= 0.07


@pytest.mark.usefixtures("no_full_gc")
def test_holm_is_statsmodels_and_skips_nan() -> None:
    from statsmodels.stats.multitest import multipletests

    p = np.array([0.01, 0.04, np.nan, 0.03, 0.2])
    adj = sig.holm(p)
    exp = multipletests(p[[0, 1, 3, 4]], method="holm")[1]
    assert np.isnan(adj[2]) and np.allclose(adj[[0, 1, 3, 4]], exp)
    assert np.allclose(exp, [0.04, 0.09, 0.09, 0.2])


def test_compare_pst_difference_interval_and_family() -> None:
    rng = np.random.default_rng(3)
    a, b = person_side(rng, 300, 0.75, persons=2, corr=0.1), person_side(rng, 300, 0.5, persons=2, corr=0.1)
    res = sig.compare_pst(a, b, {"nurse": "female", "pilot": "male"}, n_boot=1000, n_perm=999, seed=4)
    ov = res["overall"]
    exp = pst.overall_sts(a["labels"], a["stereotypes"]) - pst.overall_sts(b["labels"], b["stereotypes"])
    assert ov.difference == pytest.approx(exp) and ov.a - ov.b == pytest.approx(exp)
    assert ov.low < ov.difference < ov.high and ov.low > 0 and ov.p_value == pytest.approx(1 / 1000)
    assert ov.p_holm is None and ov.ci_method == "bca-cluster"
    micro_a = pst.micro_sts(a["identities"], a["labels"], a["stereotypes"])
    assert res["micro"]["nurse"].a == pytest.approx(micro_a["nurse"])
    assert res["micro"]["nurse"].p_holm >= res["micro"]["nurse"].p_value  # Holm over the identities
    assert res["groups"]["female"].difference == pytest.approx(res["micro"]["nurse"].difference)
    assert res["only_a"] == res["only_b"] == []
    # the two settings of one campaign: identical data -> difference 0, p = 1
    same = sig.compare_pst(a, a, n_boot=200, n_perm=99, seed=1)["overall"]
    assert same.difference == 0 and same.p_value == 1.0


def test_compare_pst_gap_uses_the_setting_as_stratum() -> None:
    rng = np.random.default_rng(8)
    a_s, a_p = person_side(rng, 120, 0.5), person_side(rng, 200, 0.75, persons=2)
    b_s, b_p = person_side(rng, 120, 0.5), person_side(rng, 200, 0.5, persons=2)
    res = sig.compare_pst_gap(a_s, a_p, b_s, b_p, n_boot=500, n_perm=500, seed=2)
    gap_a = pst.overall_sts(a_p["labels"], a_p["stereotypes"]) - pst.overall_sts(a_s["labels"], a_s["stereotypes"])
    gap_b = pst.overall_sts(b_p["labels"], b_p["stereotypes"]) - pst.overall_sts(b_s["labels"], b_s["stereotypes"])
    ov = res["overall"]
    assert ov.a == pytest.approx(gap_a) and ov.b == pytest.approx(gap_b)
    assert ov.difference == pytest.approx(gap_a - gap_b) and ov.low < ov.difference < ov.high
    assert ov.p_value < 0.05


def _gep_side(rng: np.random.Generator, fw: np.ndarray, fm: np.ndarray, n: int = 80) -> dict[str, np.ndarray]:
    attrs = [f"a{j}" for j in range(fw.size)]
    img, g, a, lab = [], [], [], []
    for gi, f in enumerate((fw, fm)):
        x = rng.random((n, f.size)) < f
        for i in range(n):
            for j in range(f.size):
                img.append(gi * n + i)
                g.append("A woman" if gi == 0 else "A man")
                a.append(attrs[j])
                lab.append("yes" if x[i, j] else "no")
    return {"image_ids": np.array(img), "genders": np.array(g), "attributes": np.array(a), "labels": np.array(lab)}


def test_compare_gep_score_and_components() -> None:
    rng = np.random.default_rng(5)
    base = np.array([0.1, 0.2, 0.3, 0.15])
    a = _gep_side(rng, base + np.array([0.4, 0, 0, 0]), base)  # one attribute differs a lot
    b = _gep_side(rng, base, base)
    attrs = ["a0", "a1", "a2", "a3"]
    res = sig.compare_gep(a, b, ["A woman", "A man"], attrs, n_boot=1000, n_perm=999, seed=1)
    rep_a = gep.gep_report(a["genders"], a["attributes"], a["labels"], ["A woman", "A man"], attrs)
    rep_b = gep.gep_report(b["genders"], b["attributes"], b["labels"], ["A woman", "A man"], attrs)
    assert res["score"].a == pytest.approx(rep_a["score"]) and res["score"].b == pytest.approx(rep_b["score"])
    assert res["score"].difference > 0.05 and res["score"].p_value < 0.01
    assert res["vector"]["a0"].low > 0 and res["vector"]["a0"].p_holm < 0.05
    assert all(res["vector"][x].p_holm is not None for x in attrs)
    assert res["score"].low <= res["score"].difference <= res["score"].high
