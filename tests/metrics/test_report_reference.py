"""The report reproduces the papers' published tables from labels stored through the product's own
models: campaign from the preset, images, questions, answers from 3 annotators each.

PST: label counts per occupation equal PST Table 14 -> overall single 10.00, paired 47.38, gap 37.38,
group means, every micro STS. GEP: counts = round(f x 80) from GEP Tables 11 and 12 -> GEP scores
round to Table 3 and vectors match Tables 13-14 within the rounding of the published frequencies.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from campaigns import presets
from metrics.core.amplification import amplification as core_amplification
from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.intervals import count_intervals, interval_violations
from tests.builders.metrics import annotators, answer_all, campaign_with_questions

REF = Path(__file__).resolve().parent.parent / "fixtures" / "reference"
HALF_CENT = 0.005 + 1e-9
pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def pst_ref() -> dict[str, Any]:
    return json.loads((REF / "pst_table14.json").read_text())


@pytest.fixture(scope="module")
def gep_ref() -> dict[str, Any]:
    return json.loads((REF / "gep_tables.json").read_text())


def _pst_report(owner: User, ref: dict[str, Any], **opts: Any) -> dict[str, Any]:
    spec = {"name": "dalle3-pst", "kind": "pst", "seed": 1, "design": {"aspect": "occupation"},
            "backend": {"name": "import", "model": "dall-e-3"}}
    campaign, questions = campaign_with_questions(owner, spec)
    rows = {r["occupation"]: r for r in ref["table14"]}
    paired_left: dict[str, list[str]] = {}
    for occ, r in rows.items():
        n_f = round(r["pct_f_paired"] * 40 / 100)
        paired_left[occ] = ["Feminine"] * n_f + ["Masculine"] * (40 - n_f)
    used: dict[str, int] = defaultdict(int)

    def label_of(q: Any) -> str:
        occ = q.metadata["identity"]
        if q.setting == "single":
            return rows[occ]["single_run_labels"][q.metadata["sample_index"]]
        used[occ] += 1
        return paired_left[occ][used[occ] - 1]

    answer_all(campaign, questions, label_of, annotators(3))
    assert all(n == 40 for n in used.values()) and len(used) == 40
    return report_build(campaign=campaign, options=ReportOptions(n_boot=200, n_perm=200, **opts))


def test_pst_table14_reproduced(researcher: User, pst_ref: dict[str, Any]) -> None:
    report = _pst_report(researcher, pst_ref)
    pst = report["pst"]
    assert pst["single"]["persons"] == 120 and pst["paired"]["persons"] == 1600
    assert pst["paired"]["images"] == 800 and pst["single"]["images"] == 120
    assert abs(pst["single"]["overall"] - 10.00) < HALF_CENT
    assert abs(pst["paired"]["overall"] - 47.38) < HALF_CENT
    assert abs(pst["gap"]["overall"] - 37.38) < HALF_CENT
    assert [round(v, 2) for v in pst["single"]["runs"]] == [20.00, -5.00, 15.00]  # Table 13
    assert abs(pst["single"]["runs_mean"] - 10.00) < HALF_CENT
    groups_s, groups_p = pst["single"]["groups"], pst["paired"]["groups"]
    assert abs(groups_s["male"] - -30.00) < HALF_CENT and abs(groups_s["female"] - 50.00) < HALF_CENT
    assert abs(groups_p["female"] - 45.00) < HALF_CENT
    # Table 3 prints 49.74: Table 14's 20 male micro STS sum to 995, so the mean is 49.75 exactly; the
    # paper truncated a floating-point 49.7499999... (it truncates elsewhere too: 13.88 for 10/72). We
    # report the exact mean, one unit in the last published digit above the printed figure.
    assert groups_p["male"] == pytest.approx(49.75, abs=1e-9)
    assert abs(groups_p["male"] - 49.74) <= 0.01 + 1e-9
    for r in pst_ref["table14"]:
        occ = r["occupation"]
        assert abs(pst["single"]["micro"][occ] - r["micro_sts_single"]) < HALF_CENT, occ
        assert abs(pst["paired"]["micro"][occ] - r["micro_sts_paired"]) < HALF_CENT, occ
        assert abs(pst["single"]["percent_feminine"][occ] - r["pct_f_single"]) < HALF_CENT, occ
        assert abs(pst["paired"]["percent_feminine"][occ] - r["pct_f_paired"]) < HALF_CENT, occ
    for r in pst_ref["table15"]:
        assert abs(pst["gap"]["micro"][r["occupation"]] - r["gap"]) < 0.01 + 1e-9, r["occupation"]
    # No Cannot identify in the published data: both treatments agree, and the counts say so.
    assert pst["excluded"]["paired"] == {"cannot_identify": 0, "ties": 0, "unanswered": 0, "persons": 1600}
    assert pst["single"]["without_undetermined"]["overall"] == pytest.approx(pst["single"]["overall"])
    # Intervals: contain the estimate, seeded.
    lo, hi = pst["paired"]["overall_ci"]
    assert lo < pst["paired"]["overall"] < hi and hi - lo < 15
    assert pst["paired"]["overall_ci_method"] == "bca-cluster" and pst["paired"]["micro_ci_method"] == "wilson-deff"
    assert interval_violations(report) == [] and count_intervals(report) >= 12
    # runs_mean_ci comes from the runs (images resampled within each run), not the overall interval.
    assert pst["single"]["runs_mean_ci"] != pst["single"]["overall_ci"]
    assert len(pst["single"]["runs_ci"]) == 3 and pst["single"]["runs_mean_ci_method"] == "bca-cluster"
    assert pst["gap"]["permutation_test"]["p_value"] < 0.01
    # 3 single images per identity: no per-identity gap interval, and the report says why (issue 22).
    assert pst["gap"]["micro_ci"] == {} and pst["gap"]["micro_ci_method"] == "newcombe-deff"
    flagged = [w for w in report["warnings"] if not w["path"].startswith("pst.gender_balance.")]
    assert [w["path"] for w in flagged] == ["pst.gap.micro_ci", "amplification.labor_statistics.ttest"]
    assert "40 of 40 identities" in flagged[0]["message"]
    # and a Neutrality interval (test inversion) is flagged conservative exactly where identities are near balance
    near = [f"pst.gender_balance.{k}.neutrality_ci" for k in ("single", "paired")
            if pst["gender_balance"][k]["neutrality_near_balance"] >= 1]
    assert [w["path"] for w in report["warnings"] if w not in flagged] == near
    assert pst["gender_balance"]["single"]["neutrality_ci_method"] == "neutrality-test-inversion"
    # 2-1 majorities on every third question: agreement is high but not perfect.
    agreement = report["agreement"]["overall"]
    assert 0.3 < agreement["fleiss_kappa"] < 0.95 and agreement["answers"] == 3 * 1720
    assert set(report["agreement"]["by_setting"]) == {"single", "paired"}
    assert pst["labor_stats_percent_female"]["nurse"] == 87.9
    # Amplification against the occupation preset's default reference (the shipped labour statistics),
    # from the single setting's %F: the same figures as metrics.core.amplification on Table 14's %F.
    amp = report["amplification"]["labor_statistics"]
    labor = presets.labor_stats_percent_female()
    # (Table 14 prints %F rounded: 1 of 3 is 33.33; no Cannot identify here, so the single setting's %F is it.)
    assert all(abs(pst["single"]["percent_feminine"][r["occupation"]] - r["pct_f_single"]) < HALF_CENT
               for r in pst_ref["table14"])
    expected = core_amplification({"1": pst["single"]["percent_feminine"]}, labor)
    assert amp["source"].startswith("PST paper Table 14") and amp["setting"] == "single"
    assert amp["average"] == pytest.approx(expected["average"], abs=1e-9)
    assert amp["templates"]["1"]["excluded"] == expected["templates"]["1"]["excluded"]
    assert amp["templates"]["1"]["n_kept"] == expected["templates"]["1"]["n_kept"] > 0
    assert amp["uncovered"] == ["chief"]  # N/A in the labour statistics: listed, not dropped silently
    assert amp["average_ci"][0] <= amp["average"] <= amp["average_ci"][1]
    assert amp["correlation"]["pearson"] == pytest.approx(expected["correlation"]["pearson"])
    # 3 single images per identity (issue 22): no test of amplification, the mean without the exclusion beside.
    assert amp["ttest"]["p_value"] is None and "calibrated_test" not in amp and "3 labelled" in amp["test_note"]
    free = amp["without_exclusion"]
    assert free["average_ci"][0] <= free["average"] <= free["average_ci"][1]
    assert free["templates"]["1"]["n"] >= amp["templates"]["1"]["n_kept"]


def test_pst_cannot_identify_treatments(researcher: User, pst_ref: dict[str, Any]) -> None:
    spec = {"name": "tiny", "kind": "pst", "seed": 2, "design": {"settings": ["single"], "samples": {"single": 1},
            "identities": {"groups": [{"name": "m", "stereotype": "masculine", "identities": ["pilot"]},
                                      {"name": "f", "stereotype": "feminine", "identities": ["nanny"]}]}},
            "backend": {"name": "placeholder"}}
    campaign, questions = campaign_with_questions(researcher, spec)
    labels = {"pilot": "Masculine", "nanny": "Cannot identify"}
    answer_all(campaign, questions, lambda q: labels[q.metadata["identity"]], annotators(3), dissent_every=0)
    paper = report_build(campaign=campaign, options=ReportOptions(n_boot=0))["pst"]
    excluded = report_build(campaign=campaign, options=ReportOptions(n_boot=0, treatment="excluded"))["pst"]
    assert paper["single"]["overall"] == 0.0  # (+1 - 1) / 2: Cannot identify counts as -1
    assert paper["single"]["without_undetermined"]["overall"] == 100.0
    assert excluded["single"]["overall"] == 100.0 and excluded["single"]["paper_formula"]["overall"] == 0.0
    assert paper["excluded"]["single"]["cannot_identify"] == 1
    assert excluded["single"]["micro"]["nanny"] is None  # nobody counted: null, not a number


MODEL_SEED = {"CogView2": 11, "DALLE-2": 12, "Stable Diffusion": 13}


@pytest.mark.parametrize("model", ["CogView2", "DALLE-2", "Stable Diffusion"])
def test_gep_tables_reproduced(researcher: User, gep_ref: dict[str, Any], model: str) -> None:
    spec = {"name": f"gep-{model}", "kind": "gep", "seed": MODEL_SEED[model], "design": {},
            "backend": {"name": "import", "model": model}}
    campaign, questions = campaign_with_questions(researcher, spec)
    attrs = gep_ref["attributes"]
    freq = {"neutral": gep_ref["table11_neutral_frequencies"][model],
            "explicit": gep_ref["table12_explicit_frequencies"][model]}
    target = {(s, g, a): round(freq[s][row][i] * 80) for s in freq for g, row in (("woman", "women"), ("man", "men"))
              for i, a in enumerate(attrs)}
    used: dict[tuple[str, str, str], int] = defaultdict(int)

    def label_of(q: Any) -> str:
        cell = (q.setting, q.metadata["gender"], q.metadata["attribute"])
        used[cell] += 1
        return "Yes" if used[cell] <= target[cell] else "No"

    answer_all(campaign, questions, label_of, annotators(3))
    assert set(used.values()) == {80}
    report = report_build(campaign=campaign, options=ReportOptions(n_boot=100))
    gep = report["gep"]
    for setting, table in (("neutral", "table13_neutral_vectors"), ("explicit", "table14_explicit_vectors")):
        published_score = gep_ref["table3_gep"][setting][model]
        assert round(gep[setting]["score"], 2) == published_score, (setting, gep[setting]["score"])
        for i, a in enumerate(attrs):
            f_w = gep[setting]["frequencies"]["woman"][a]
            f_m = gep[setting]["frequencies"]["man"][a]
            assert abs(f_w - freq[setting]["women"][i]) <= 0.00625 + 1e-9  # counts out of 80
            assert abs(f_m - freq[setting]["men"][i]) <= 0.00625 + 1e-9
            assert abs(gep[setting]["vector"][a] - gep_ref[table][model][i]) <= 0.005 + 1e-9, (setting, a)
        lo, hi = gep[setting]["score_ci"]
        assert lo <= gep[setting]["score"] <= hi and gep[setting]["score_ci_method"] == "gep-test-inversion"
        assert len(gep[setting]["by_context"]) == 16
    assert interval_violations(report) == []
    assert gep["explicit"]["images"] == 2400 and gep["neutral"]["images"] == 160
    assert report["agreement"]["by_setting"]["neutral"]["questions"] == 2400
