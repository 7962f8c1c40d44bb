"""The report's hybrid and agreement builders on hand-made data (no database): they call the core
functions on the right rows, and the report-level frequencies keep their coverage."""
from __future__ import annotations

import numpy as np
import pytest

from metrics.core import hybrid, machine
from metrics.options import ReportOptions
from metrics.sections.sources import agreement_section, hybrid_section
from tests.builders.hybrid_data import ATTRS, TRUTH, hybrid_gep_data


def test_hybrid_section_calls_ppi_on_the_right_rows() -> None:
    data, human, mdata = hybrid_gep_data(1)
    out = hybrid_section(data, human, mdata, ReportOptions(n_boot=200), seed=3)
    cell = (data.q_meta["gender"] == "woman") & (data.q_meta["attribute"] == "dress")
    lab, unl = cell & mdata.sampled, cell & ~mdata.sampled
    ref = hybrid.ppi_mean((human[lab] == "Yes").astype(float), (mdata.choice[lab] == "Yes").astype(float),
                          (mdata.choice[unl] == "Yes").astype(float))
    got = out["neutral"]["frequencies"]["woman"]["dress"]
    assert got == {**ref, "sparse": False}
    man = out["neutral"]["frequencies"]["man"]["dress"]  # f = 0.05: about 4 present among ~90 human labels
    assert man["sparse"] and man["method"] == "wilson-human" and man["ci"][0] <= man["estimate"] <= man["ci"][1]
    vec = out["neutral"]["vector"]["dress"]
    assert vec["method"] == "newcombe-human" and vec["estimate"] == pytest.approx(
        got["human_only"]["estimate"] - man["estimate"])
    assert out["sample"]["human_questions"] == int(mdata.sampled.sum())
    score = out["neutral"]["score"]
    truth = np.mean([abs(TRUTH[("woman", a)] - TRUTH[("man", a)]) for a in ATTRS])
    assert score["ci"][0] < truth < score["ci"][1] and score["method"] == "ppi-gep-test-inversion"
    assert score["ci"][0] <= score["estimate"] <= score["ci"][1]


def test_report_level_frequencies_cover_and_machine_only_does_not() -> None:
    hits = {"hybrid": 0, "machine": 0}
    runs = 150
    for seed in range(runs):
        data, human, mdata = hybrid_gep_data(100 + seed)
        out = hybrid_section(data, human, mdata, ReportOptions(n_boot=1), seed=seed)
        f = out["neutral"]["frequencies"]["woman"]["dress"]
        hits["hybrid"] += f["ci"][0] <= TRUTH[("woman", "dress")] <= f["ci"][1]
        m = f["machine_only"]
        hits["machine"] += m["ci"][0] <= TRUTH[("woman", "dress")] <= m["ci"][1]
    assert hits["hybrid"] / runs >= 0.92, hits
    assert hits["machine"] / runs < 0.5, hits


def test_agreement_section_per_attribute_matches_the_core_function() -> None:
    data, human, mdata = hybrid_gep_data(2)
    out = agreement_section(data, human, mdata, ReportOptions(n_boot=100), seed=4)
    direct = machine.agreement_by_group(human, mdata.choice, data.q_image, data.q_meta["attribute"],
                                        score=mdata.score, positive="Yes", n_boot=100, seed=4)
    neutral = out["by_setting"]["neutral"]
    assert neutral["attributes"] == direct["groups"]
    assert neutral["roc_auc_mean"] == direct["roc_auc_mean"]
    assert neutral["n"] == int(mdata.sampled.sum())  # only questions with a human label


def test_hybrid_keeps_human_ties_and_machine_failures_with_the_reports_coding() -> None:
    # issue 22 #5: dropping them made the hybrid estimate another quantity than the human report
    from metrics.core.report_warnings import collecting

    data, human, mdata = hybrid_gep_data(3)
    rng = np.random.default_rng(0)
    human = np.where((human != "") & (rng.random(human.size) < 0.05), "tie", human)
    failed = rng.random(human.size) < 0.1
    mdata.choice[failed] = ""
    with collecting() as log:
        out = hybrid_section(data, human, mdata, ReportOptions(n_boot=50), seed=1)
    assert out["sample"]["human_questions"] == int((mdata.sampled & (human != "")).sum())  # ties included
    assert out["sample"]["machine_only_questions"] == int((~mdata.sampled).sum())  # failures included
    assert out["methods"]["machine_failed"] == "No"
    cell = (data.q_meta["gender"] == "woman") & (data.q_meta["attribute"] == "dress")
    lab, unl = cell & mdata.sampled & (human != ""), cell & ~mdata.sampled
    yhat = np.where(mdata.choice == "Yes", 1.0, 0.0)  # a failure counts as "No"; a tie as absent
    ref = hybrid.ppi_mean((human[lab] == "Yes").astype(float), yhat[lab], yhat[unl])
    assert out["neutral"]["frequencies"]["woman"]["dress"]["estimate"] == pytest.approx(ref["estimate"])
    assert any(w["path"] == "hybrid.clip_cls.neutral" and "wilson-human" in w["message"] for w in log.as_list())


def test_every_hybrid_block_carries_its_method_and_the_checker_holds_it() -> None:
    # issue 22: every figure carries its method, the human-only and machine-only ones too
    import copy

    from bench.validity_cells.hybrid import pst_campaign
    from metrics.sections.schema import HYBRID_ESTIMATE
    from tests.builders.intervals import interval_violations

    data, human, mdata = hybrid_gep_data(4)
    gep_out = hybrid_section(data, human, mdata, ReportOptions(n_boot=50), seed=2)["neutral"]
    assert gep_out["frequencies"]["woman"]["dress"]["human_only"]["method"] == "classical-mean"
    assert gep_out["frequencies"]["man"]["dress"]["human_only"]["method"] == "wilson"  # the sparse fallback
    assert gep_out["frequencies"]["man"]["dress"]["machine_only"]["method"] == "classical-mean"
    assert gep_out["vector"]["dress"]["human_only"]["method"] == "newcombe"
    assert gep_out["score"]["human_only"]["method"] == gep_out["score"]["machine_only"]["method"] == (
        "gep-test-inversion")
    pst_out = pst_campaign(0, n_images=60, n_human=30)
    assert pst_out["overall"]["human_only"]["method"] == "classical-ratio-delta"
    for block in (gep_out, pst_out):
        assert interval_violations(block) == []
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(HYBRID_ESTIMATE)
    assert validator.is_valid(gep_out["score"]) and validator.is_valid(pst_out["overall"])
    broken = copy.deepcopy(gep_out)
    del broken["vector"]["dress"]["machine_only"]["method"]
    assert interval_violations(broken) == ["vector.dress.machine_only.ci: no ci_method"]
    assert not validator.is_valid(broken["vector"]["dress"])
