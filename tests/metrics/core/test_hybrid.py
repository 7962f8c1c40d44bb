"""Hybrid (prediction-powered) estimates: ppi_py calls, degenerate inputs, and coverage by simulation
(bench/ppi_coverage.py's scenarios, 400 seeded runs)."""
from __future__ import annotations

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from bench import ppi_coverage as sim
from metrics.core import hybrid


def test_ppi_mean_is_ppi_pys_and_human_only_is_classical() -> None:
    rng = np.random.default_rng(0)
    y = (rng.random(150) < 0.3).astype(float)
    yh = np.where(rng.random(150) < 0.9, y, 1 - y)
    yu = (rng.random(900) < 0.33).astype(float)
    r = hybrid.ppi_mean(y, yh, yu)
    assert r["estimate"] == pytest.approx(float(ppi_mean_pointestimate(y, yh, yu)[0]))
    assert r["ci"] == pytest.approx([float(v[0]) for v in ppi_mean_ci(y, yh, yu, alpha=0.05)])
    assert r["human_only"]["estimate"] == pytest.approx(y.mean())
    assert r["human_only"]["ci"] == pytest.approx(list(classical_mean_ci(y, alpha=0.05)))
    assert r["machine_only"]["estimate"] == pytest.approx(np.r_[yh, yu].mean())
    assert r["n_human"] == 150 and r["n_machine"] == 900 and r["machine_only"]["n"] == 1050
    assert 0 <= r["lambda"] <= 1
    # the reported lambda reproduces the point estimate
    assert r["estimate"] == pytest.approx(r["lambda"] * yu.mean() + y.mean() - r["lambda"] * yh.mean())
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert r["effective_human_labels"] == pytest.approx(150 * (width(r["human_only"]["ci"]) / width(r["ci"])) ** 2)
    assert r["human_labels_saved"] == pytest.approx(r["effective_human_labels"] - 150)


def test_degenerate_inputs() -> None:
    assert hybrid.ppi_mean([1.0], [1.0], [0.0, 1.0])["estimate"] is None  # one human unit
    same = hybrid.ppi_mean(np.ones(20), np.ones(20), np.ones(50))  # nothing varies
    assert same["estimate"] == pytest.approx(1.0) and same["ci"][0] == pytest.approx(1.0)
    alone = hybrid.ppi_mean([1.0, 0.0, 1.0], [1.0, 0.0, 0.0], [])  # no machine-only unit: human only
    assert alone["estimate"] == pytest.approx(2 / 3) and alone["lambda"] == 0.0
    ratio = hybrid.ppi_ratio([0, 0], [0, 0], [1, 1], [1, 1], [1], [1])
    assert ratio["estimate"] is None
    with pytest.raises(ValueError):
        hybrid.ppi_mean([1.0, 0.0], [1.0], [0.0])


def test_ratio_without_machine_help_is_the_human_ratio() -> None:
    rng = np.random.default_rng(4)
    num, den = rng.integers(-2, 3, 80).astype(float), np.full(80, 2.0)
    r = hybrid.ppi_ratio(num, den, rng.normal(size=80), den, rng.normal(size=300), np.full(300, 2.0), scale=100)
    # noise predictions: power tuning trusts them (almost) not at all
    assert r["estimate"] == pytest.approx(100 * num.sum() / den.sum(), abs=3.0)
    assert r["human_only"]["estimate"] == pytest.approx(100 * num.sum() / den.sum())


def test_ppboot_is_seeded_and_leaves_numpys_global_generator_alone() -> None:
    rng = np.random.default_rng(0)
    rows = rng.random((60, 4))
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    r1 = hybrid.ppi_statistic(lambda x: float(x.mean()), rows[:20], rows[:20] * 0.9, rows[20:], n_boot=100, seed=1)
    assert np.array_equal(before, np.random.get_state()[1])
    r2 = hybrid.ppi_statistic(lambda x: float(x.mean()), rows[:20], rows[:20] * 0.9, rows[20:], n_boot=100, seed=1)
    assert r1 == r2 and r1["method"] == "ppboot"


def test_gep_score_test_inversion_is_seeded_and_holds_its_estimate() -> None:
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    a, truth = sim.run_gep_score(3, n_images=120, n_human=40, n_boot=200)
    assert np.array_equal(before, np.random.get_state()[1])
    b, _ = sim.run_gep_score(3, n_images=120, n_human=40, n_boot=200)
    assert a == b
    assert a["method"] == "ppi-gep-test-inversion" and a["ci"][0] <= a["estimate"] <= a["ci"][1]
    assert a["human_only"]["ci"][0] < a["human_only"]["estimate"] < a["human_only"]["ci"][1]


@pytest.mark.parametrize("scenario", ["frequency", "vector", "sts"])
def test_hybrid_covers_the_truth_where_the_machine_alone_is_biased(scenario: str) -> None:
    res = sim.run(scenario, 400)
    hy, hu, ma = res["hybrid"], res["human_only"], res["machine_only"]
    assert hy["coverage"] >= 0.93, res
    assert hy["mean_width"] < hu["mean_width"], res  # narrower at the same human budget
    assert hu["coverage"] >= 0.92, res
    # the machine alone is biased: its error is several times its own standard error, its CI misses
    assert abs(ma["bias"]) > ma["mean_width"] / 2 and ma["coverage"] < 0.6, res
    assert abs(hy["bias"]) < abs(ma["bias"]) / 4, res
    assert res["mean_human_labels_saved"] > 0


def test_gep_score_prediction_powered_test_inversion_covers() -> None:
    res = sim.run("gep_score", 80)
    hy, ma = res["hybrid"], res["machine_only"]
    assert hy["coverage"] >= 0.90, res
    assert ma["coverage"] < 0.6 and abs(ma["bias"]) > 4 * abs(hy["bias"]), res
    assert hy["mean_width"] < res["human_only"]["mean_width"], res


def test_no_bootstrap_gives_point_estimates_only() -> None:
    full, _ = sim.run_gep_score(5, n_images=120, n_human=40, n_boot=200)
    rng = np.random.default_rng(0)
    rows = rng.random((60, 4))
    r = hybrid.ppi_statistic(lambda x: float(x.mean()), rows[:20], rows[:20] * 0.9, rows[20:], n_boot=0, seed=1)
    assert r["ci"] == [None, None] and r["estimate"] is not None
    assert r["human_only"]["estimate"] == pytest.approx(rows[:20].mean())
    assert full["ci"][0] is not None


def test_gep_score_without_bootstrap_gives_the_point_estimate_only() -> None:
    full, _ = sim.run_gep_score(5, n_images=120, n_human=40, n_boot=200)
    point, _ = sim.run_gep_score(5, n_images=120, n_human=40, n_boot=0)
    assert point["ci"] == [None, None] and point["estimate"] is not None
    assert point["human_only"]["estimate"] == pytest.approx(full["human_only"]["estimate"])
