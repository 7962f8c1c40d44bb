"""Machine-vs-human agreement (metrics/core/machine.py) against sklearn / scipy, and GEP Table 6."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, cohen_kappa_score, matthews_corrcoef, roc_auc_score

from metrics.core import machine as mc
from tests.builders.machine import TABLE_6, TABLE_6_HUMAN

CHOICES = np.array(["feminine", "masculine", "cannot identify"])


def _labels(rng: np.random.Generator, n: int, flip: float) -> tuple[np.ndarray, np.ndarray]:
    h = rng.choice(CHOICES, n, p=[0.45, 0.45, 0.1])
    m = np.where(rng.random(n) < flip, rng.choice(CHOICES, n), h)
    return h.astype(object), m.astype(object)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_point_estimates_are_sklearns(seed: int) -> None:
    rng = np.random.default_rng(seed)
    h, m = _labels(rng, 300, 0.4)
    images = np.repeat(np.arange(150), 2)
    r = mc.label_agreement(h, m, images, n_boot=200, seed=seed)
    assert r["n"] == 300 and r["n_images"] == 150
    assert r["cohen_kappa"] == pytest.approx(cohen_kappa_score(h.astype(str), m.astype(str)))
    assert r["accuracy"] == pytest.approx(accuracy_score(h.astype(str), m.astype(str)))
    assert r["mcc"] == pytest.approx(matthews_corrcoef(h.astype(str), m.astype(str)))
    for name in mc.AGREEMENT_STATS:
        low, high = r[f"{name}_ci"]
        assert low <= r[name] <= high and high - low > 0.01
    assert r["roc_auc"] is None  # no scores


def test_vectorised_resample_formulas_equal_sklearn_with_weights() -> None:
    rng = np.random.default_rng(5)
    h, m = _labels(rng, 200, 0.5)
    codes = {c: i for i, c in enumerate(sorted(CHOICES))}
    hc, mcodes = np.array([codes[x] for x in h]), np.array([codes[x] for x in m])
    w = rng.integers(0, 4, size=(6, 200)).astype(float)
    cm = np.zeros((6, 3, 3))
    for b in range(6):
        np.add.at(cm[b], (hc, mcodes), w[b])
    got = mc._confusion_stats(cm)
    for b in range(6):
        assert got[b, 0] == pytest.approx(cohen_kappa_score(hc, mcodes, sample_weight=w[b]))
        assert got[b, 1] == pytest.approx(accuracy_score(hc, mcodes, sample_weight=w[b]))
        assert got[b, 2] == pytest.approx(matthews_corrcoef(hc, mcodes, sample_weight=w[b]))
    # ROC-AUC with tied scores
    y = rng.random(200) < 0.4
    s = np.round(np.clip(0.3 * y + rng.random(200) * 0.7, 0, 1), 1)
    got_auc = mc._weighted_auc(y, s, w)
    for b in range(6):
        assert got_auc[b] == pytest.approx(roc_auc_score(y, s, sample_weight=w[b]))


def test_intervals_match_scipy_bca_when_each_question_is_its_own_image() -> None:
    rng = np.random.default_rng(11)
    h = rng.choice(["yes", "no"], 250).astype(object)
    m = np.where(rng.random(250) < 0.25, rng.choice(["yes", "no"], 250), h).astype(object)
    s = np.clip(0.35 * (h == "yes") + rng.random(250) * 0.65, 0, 1)
    r = mc.label_agreement(h, m, np.arange(250), score=s, positive="yes", n_boot=4000, seed=3)
    hs, ms = (h == "yes").astype(int), (m == "yes").astype(int)
    for name, fn, data in (
        ("cohen_kappa", lambda a, b: cohen_kappa_score(a, b), (hs, ms)),
        ("roc_auc", lambda a, b: roc_auc_score(a, b), (hs, s)),
    ):
        ref = stats.bootstrap(data, fn, paired=True, vectorized=False, n_resamples=4000, method="BCa",
                              rng=np.random.default_rng(4)).confidence_interval
        assert r[f"{name}_ci"][0] == pytest.approx(ref.low, abs=0.015)
        assert r[f"{name}_ci"][1] == pytest.approx(ref.high, abs=0.015)
    assert r["roc_auc"] == pytest.approx(roc_auc_score(hs, s))
    assert mc.label_agreement(h, m, np.arange(250), score=s, positive="yes", n_boot=300, seed=3) == \
        mc.label_agreement(h, m, np.arange(250), score=s, positive="yes", n_boot=300, seed=3)


def test_missing_ties_and_one_class_are_left_out() -> None:
    h = np.array(["yes", "no", "tie", "", None, "yes", "yes"], dtype=object)
    m = np.array(["yes", "yes", "no", "no", "yes", "", "no"], dtype=object)
    s = np.array([0.9, 0.8, 0.1, 0.2, 0.5, np.nan, 0.3])
    r = mc.label_agreement(h, m, np.arange(7), score=s, positive="yes", n_boot=100)
    assert r["n"] == 3  # rows 0, 1, 6
    assert r["accuracy"] == pytest.approx(1 / 3)
    assert r["roc_auc"] == pytest.approx(roc_auc_score([1, 0, 1], [0.9, 0.8, 0.3]))
    one = mc.label_agreement(["yes"] * 5, ["yes", "no", "yes", "yes", "no"], np.arange(5), score=[0.5] * 5,
                             positive="yes", n_boot=50)
    assert one["roc_auc"] is None and one["n"] == 5
    empty = mc.label_agreement(["", ""], ["yes", "no"], [1, 2], n_boot=50)
    assert empty["n"] == 0 and empty["cohen_kappa"] is None


def test_by_group_gives_table_16_per_attribute_and_table_7_mean() -> None:
    rng = np.random.default_rng(2)
    n_img, attrs = 160, ["beard", "dress", "tie"]
    images = np.repeat(np.arange(n_img), len(attrs))
    groups = np.tile(attrs, n_img)
    strength = {"beard": 0.6, "dress": 0.3, "tie": 0.05}
    h = rng.choice(["yes", "no"], images.size).astype(object)
    s = np.clip(np.array([strength[g] for g in groups]) * (h == "yes") + rng.random(images.size) * 0.6, 0, 1)
    m = np.where(s > 0.5, "yes", "no").astype(object)
    r = mc.agreement_by_group(h, m, images, groups, score=s, positive="yes", n_boot=500, seed=1)
    per = {a: roc_auc_score(h[groups == a] == "yes", s[groups == a]) for a in attrs}
    for a in attrs:
        assert r["groups"][a]["roc_auc"] == pytest.approx(per[a])
        assert r["groups"][a]["n"] == n_img
    assert r["groups"]["beard"]["roc_auc"] > r["groups"]["tie"]["roc_auc"]
    assert r["roc_auc_mean"] == pytest.approx(np.mean(list(per.values())))
    lo, hi = r["roc_auc_mean_ci"]
    assert lo < r["roc_auc_mean"] < hi
    # the mean over 3 attributes is tighter than one attribute's interval
    assert hi - lo < np.diff(r["groups"]["dress"]["roc_auc_ci"])[0]
    assert r["overall"]["n"] == images.size and r["roc_auc_groups"] == 3


def test_vector_agreement_against_scipy_and_sign_rule() -> None:
    rng = np.random.default_rng(9)
    a, b = rng.normal(size=40), rng.normal(size=40)
    b[:5] = 0.0  # zero counts as non-negative (GEP appendix D)
    r = mc.vector_agreement(a, b)
    assert r["kendall_tau_b"] == pytest.approx(stats.kendalltau(a, b, variant="b").statistic)
    assert r["pearson"] == pytest.approx(stats.pearsonr(a, b).statistic)
    assert r["mcc"] == pytest.approx(matthews_corrcoef(b >= 0, a >= 0))
    assert r["n"] == 40
    d = mc.vector_agreement({"x": 0.1, "y": -0.2, "z": None}, {"x": 0.2, "y": -0.1, "z": 0.3, "w": 1.0})
    assert d["n"] == 2 and d["mcc"] == pytest.approx(1.0) and d["kendall_tau_b"] == pytest.approx(1.0)
    assert mc.vector_agreement([1.0], [2.0])["kendall_tau_b"] is None


@pytest.mark.parametrize(("method", "tau"), [("C", 0.466), ("CC", 0.733), ("CLS", 1.000)])
def test_gep_table_6_kendall_tau(method: str, tau: float) -> None:
    got = mc.vector_agreement(TABLE_6[method], TABLE_6_HUMAN)["kendall_tau_b"]
    assert got == pytest.approx(tau, abs=0.001)
