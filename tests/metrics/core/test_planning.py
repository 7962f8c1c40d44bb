"""Sample-size planning: the analytic half-widths against simulated campaigns (annotators with the
papers' agreement, majority of R, the report's interval functions)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from metrics.core import agreement, planning
from metrics.core import intervals as iv
from metrics.core import metric_intervals as mi

from .conftest import REFERENCE_DIR


def test_annotator_accuracy_reproduces_the_agreement_it_was_solved_for() -> None:
    a = planning.annotator_accuracy(0.90, 0.5)
    assert a == pytest.approx((1 + math.sqrt(0.9)) / 2)  # kappa = 2 P_o - 1 at prevalence 0.5
    for kappa, pi in ((0.88, 0.5), (0.92, 0.5), (0.81, 0.08), (0.81, 0.75)):
        assert planning.kappa_for_accuracy(planning.annotator_accuracy(kappa, pi), pi) == pytest.approx(kappa)
    # simulated annotators of that accuracy have that Fleiss' kappa
    rng = np.random.default_rng(0)
    a = planning.annotator_accuracy(0.81, 0.2)
    truth = rng.random(20000) < 0.2
    yes = np.where(rng.random((20000, 3)) < a, truth[:, None], ~truth[:, None])
    counts = np.stack([(~yes).sum(1), yes.sum(1)], 1)
    assert agreement.fleiss_kappa_from_counts(counts).kappa == pytest.approx(0.81, abs=0.01)
    right, wrong, tie = planning.majority_accuracy(0.9, 3)
    assert right == pytest.approx(0.9 ** 3 + 3 * 0.9 ** 2 * 0.1) and tie == 0 and right + wrong == pytest.approx(1)
    assert planning.majority_accuracy(0.9, 2)[2] == pytest.approx(2 * 0.9 * 0.1)


def simulate_pst(rng: np.random.Generator, runs: int, images: int, sts: float, a: float, redundancy: int,
                 icc: float, n_boot: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Paired images (2 persons): true stereotyped with q; the second person copies the first
    with probability icc (correlation icc, marginal q); R annotators of accuracy a; label =
    majority. Returns (estimates, half-widths) of the BCa interval per run."""
    q = (sts / 100 + 1) / 2
    first = rng.random((runs, images)) < q
    second = np.where(rng.random((runs, images)) < icc, first, rng.random((runs, images)) < q)
    truth = np.stack([first, second], axis=2)
    votes = (rng.random((runs, images, 2, redundancy)) < a).sum(axis=3)
    label_stereo = np.where(2 * votes > redundancy, truth, np.where(2 * votes < redundancy, ~truth, False))
    s = np.where(label_stereo, 1.0, -1.0).sum(axis=2)  # per image
    sums = np.empty((images, 2 * runs))
    sums[:, 0::2], sums[:, 1::2] = s.T, 2.0
    ci = iv.stratified_cluster_bca(sums, lambda t: 100 * t[:, 0, 0::2] / t[:, 0, 1::2], None, n_boot, 0.95, 1)
    return np.atleast_1d(ci.estimate), (np.atleast_1d(ci.high) - np.atleast_1d(ci.low)) / 2


def test_pst_plan_matches_simulated_campaigns_and_images_needed_hits_the_target() -> None:
    plan = planning.pst_plan(400, redundancy=3, sts=40, kappa=0.9, icc=0.2, target_half_width=4.0)
    rng = np.random.default_rng(1)
    est, hw = simulate_pst(rng, 200, 400, 40, plan["assumptions"]["annotator_accuracy"], 3, 0.2)
    assert abs(est.mean() - plan["expected_sts"]) < 1.0  # label noise: 40 -> ~39.8
    assert hw.mean() == pytest.approx(plan["half_width"], rel=0.07)
    n = plan["images_needed"]
    assert n == math.ceil(400 * (plan["half_width"] / 4.0) ** 2) and n > 400
    _, hw_n = simulate_pst(rng, 100, n, 40, plan["assumptions"]["annotator_accuracy"], 3, 0.2)
    assert hw_n.mean() == pytest.approx(4.0, rel=0.07)
    # more answers per person shrink the label noise, not the sampling error
    r5 = planning.pst_plan(400, redundancy=5, sts=40, kappa=0.9, icc=0.2)
    assert r5["expected_sts"] > plan["expected_sts"] and r5["half_width"] == pytest.approx(plan["half_width"], rel=0.01)


def test_gep_plan_matches_simulated_campaigns() -> None:
    """Stable Diffusion's neutral frequencies (GEP Table 11) with 320 images per gender (4x the
    paper's, where the attribute differences stand clear of their SE), R = 3 annotators at alpha
    0.81: the analytic half-width against the test-inversion interval's mean half-width on
    simulated campaigns (independent code here; planning's own simulation too)."""
    t = json.loads((REFERENCE_DIR / "gep_tables.json").read_text())["table11_neutral_frequencies"]["Stable Diffusion"]
    fw, fm = np.array(t["women"]), np.array(t["men"])
    plan = planning.gep_plan(640, fw, fm, setting="neutral", redundancy=3, alpha=0.81, target_half_width=0.008,
                             simulate_runs=40)
    assert plan["images_per_cell"] == 320 and not plan["gep_near_zero"]
    a = plan["assumptions"]["annotator_accuracy"]
    rng = np.random.default_rng(2)
    runs, n, n_boot = 40, 320, 500
    widths, ests = [], []
    for _ in range(runs):
        labs = []
        for f in (fw, fm):
            truth = rng.random((n, 15)) < f
            votes = (rng.random((n, 15, 3)) < a).sum(axis=2)
            labs.append(np.where(votes >= 2, truth, ~truth).astype(float))
        v = labs[0].mean(0) - labs[1].mean(0)
        iw, im = rng.integers(0, n, (n_boot, n)), rng.integers(0, n, (n_boot, n))
        ci = mi.abs_mean_interval(v, labs[0][iw].mean(1) - labs[1][im].mean(1))
        widths.append((ci.high - ci.low) / 2)
        ests.append(ci.estimate)
    assert np.mean(ests) == pytest.approx(plan["expected_gep"], abs=0.004)
    # the test-inversion interval is a little wider than the normal formula (about 10% here)
    assert plan["half_width"] < np.mean(widths) < 1.15 * plan["half_width"]
    assert plan["simulated_half_width"] == pytest.approx(np.mean(widths), rel=0.08)
    assert plan["images_needed"] == math.ceil(640 * (plan["half_width"] / 0.008) ** 2)
    assert plan["images_needed_simulated"] > plan["images_needed"]


def test_gep_plan_flags_a_near_zero_design_where_the_simulation_is_the_figure_to_use() -> None:
    t = json.loads((REFERENCE_DIR / "gep_tables.json").read_text())["table11_neutral_frequencies"]["CogView2"]
    plan = planning.gep_plan(160, t["women"], t["men"], setting="neutral", simulate_runs=60)
    assert plan["gep_near_zero"] and plan["images_per_cell"] == 80
    assert plan["true_gep"] == pytest.approx(0.0227, abs=1e-4)
    # near 0 the test-inversion interval is wider than the normal formula says (bench/README.md: 8-24%)
    assert plan["simulated_half_width"] > 1.05 * plan["half_width"]
    with pytest.raises(ValueError):
        planning.gep_plan(10, 0.1, setting="explicit")


def test_adaptive_majority_matches_a_simulation_of_the_stopping_rule() -> None:
    from annotation.redundancy import DEFAULT_ADAPTIVE, settled
    from metrics.core.planning import adaptive_majority

    cfg = dict(DEFAULT_ADAPTIVE)
    a = 0.9
    rule = lambda r, w: settled({"r": r, "w": w}, 2, cfg)  # noqa: E731
    m = adaptive_majority(a, 2, 5, rule)
    assert m["right"] + m["wrong"] + m["tie"] == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    answers, right = [], []
    for _ in range(4000):
        r = w = 0
        while True:
            if rng.random() < a:
                r += 1
            else:
                w += 1
            if r + w >= 2 and (r + w >= 5 or rule(r, w)):
                break
        answers.append(r + w)
        right.append(r > w)
    assert m["answers_per_question"] == pytest.approx(np.mean(answers), abs=0.05)
    assert m["right"] == pytest.approx(np.mean(right), abs=0.02)


def test_comparison_images_give_80_percent_power() -> None:
    from metrics.core.planning import comparison_images, pst_plan

    p = pst_plan(400, redundancy=3, persons_per_image=1, icc=0.0)
    n = comparison_images(p["standard_error"], 400, 10.0)
    se_n = p["standard_error"] * np.sqrt(400 / n)
    power = 1 - stats.norm.cdf(1.959964 - 10.0 / (np.sqrt(2) * se_n))
    assert power == pytest.approx(0.80, abs=0.01)
    assert comparison_images(p["standard_error"], 400, 0.0) is None
