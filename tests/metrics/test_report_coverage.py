"""Coverage through the report path: `report_from_data` on 400 seeded simulated GEP campaigns whose
true GEP is the GEP paper's CogView2 neutral one (0.023, near 0, where the percentile bootstrap the
report used before missed it almost always). The report's 95% `score_ci` must hold its estimate in
every run and cover the truth in 93-97.5% of them (the band of the core test: just above 0 the
interval is slightly conservative, bench/README.md)."""
from __future__ import annotations

import json

import numpy as np

from bench.interval_coverage import GEP_TABLES, gep_labels
from metrics.extract.data import CampaignData, CampaignFacts
from metrics.options import ReportOptions
from metrics.sections.report import report_from_data

RUNS = 400
N = 80  # images per gender (the GEP paper's neutral design: 16 contexts x 5 samples)


def _data(run: int, x_women: np.ndarray, x_men: np.ndarray, attributes: list[str]) -> CampaignData:
    """One neutral GEP campaign: N images per gender, one question per (image, attribute), one answer
    each ("Yes" / "No")."""
    na = len(attributes)
    spec = {"design": {"genders": [{"name": "woman"}, {"name": "man"}], "attributes": [{"name": a} for a in attributes]}}
    facts = CampaignFacts(id=run + 1, name=f"sim-{run}", kind="gep", kind_display="GEP", status="closed", seed=run,
                          spec=spec)
    n_q = 2 * N * na
    yes = np.concatenate([x_women.ravel(), x_men.ravel()]).astype(np.int64)  # image-major, attribute-minor
    image = np.repeat(np.arange(2 * N), na)
    return CampaignData(
        campaign=facts, q_id=np.arange(n_q, dtype=np.int64), q_image=image.astype(np.int64),
        q_setting=np.full(n_q, "neutral"),
        q_meta={"gender": np.repeat(np.array(["woman", "man"]), N * na), "attribute": np.tile(np.array(attributes), 2 * N),
                "context": np.full(n_q, "c"), "sample_index": np.zeros(n_q, dtype=np.int64)},
        a_qidx=np.arange(n_q, dtype=np.int64), a_annotator=np.zeros(n_q, dtype=np.int64),
        a_code=yes, choices=["No", "Yes"], counts={})


def test_report_gep_score_interval_covers_a_true_gep_near_zero() -> None:
    table = json.loads(GEP_TABLES.read_text())["table11_neutral_frequencies"]["CogView2"]
    fw, fm = np.array(table["women"]), np.array(table["men"])
    truth = float(np.abs(fw - fm).mean())
    attributes = [f"a{j}" for j in range(fw.size)]
    rng = np.random.default_rng(0)
    xw, xm = gep_labels(rng, fw, RUNS, N, False), gep_labels(rng, fm, RUNS, N, False)
    options = ReportOptions(n_boot=400, n_perm=0, seed=0)
    covered = held = 0
    for run in range(RUNS):
        gep = report_from_data(_data(run, xw[run], xm[run], attributes), options)["gep"]["neutral"]
        lo, hi = gep["score_ci"]
        held += lo <= gep["score"] <= hi
        covered += lo <= truth <= hi
    assert abs(truth - 0.0233) < 0.001
    assert held == RUNS
    print(f"report-path coverage {covered / RUNS:.4f} over {RUNS} runs, truth {truth:.4f}")
    assert 0.93 <= covered / RUNS <= 0.975, covered / RUNS
