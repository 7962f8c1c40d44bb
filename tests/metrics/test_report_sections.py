"""Report sections of issue 16 built from the pure functions of metrics/core: per-run STS of any
setting with several samples, Average Gender and Neutrality, agreement per identity / attribute, GEP
with more than two genders; each in the JSON, the HTML page and the CSV zip."""
from __future__ import annotations

import copy
import csv
import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.intervals import interval_violations
from tests.builders.metrics import SMALL_GEP, SMALL_PST, annotators, answer_all, campaign_with_questions
from tests.builders.report_types import untyped_keys

pytestmark = pytest.mark.django_db


def _zip_csv(blob: bytes, name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(zipfile.ZipFile(io.BytesIO(blob)).read(name).decode())))


def pst_label(q: Any) -> str:
    """Stereotyped, except the nurse: Cannot identify in sample 1, Masculine in sample 0 of single."""
    identity, sample = q.metadata["identity"], q.metadata["sample_index"]
    if identity == "nurse":
        return "Cannot identify" if sample == 1 else "Masculine"
    return "Masculine" if q.metadata["group"] == "male" else "Feminine"


@pytest.fixture
def pst_report(researcher: User) -> tuple[Any, dict[str, Any]]:
    spec = copy.deepcopy(SMALL_PST)
    spec["design"]["samples"] = {"single": 2, "paired": 2}
    campaign, questions = campaign_with_questions(researcher, spec)
    answer_all(campaign, questions, pst_label, annotators(3))
    return campaign, report_build(campaign=campaign, options=ReportOptions(n_boot=200, n_perm=0))


def test_runs_for_every_setting_with_several_samples(pst_report: tuple[Any, dict[str, Any]]) -> None:
    _, report = pst_report
    paired = report["pst"]["paired"]
    assert paired["run_ids"] == [1, 2] and len(paired["runs_ci"]) == 2 and paired["runs_ci_method"] == "bca-cluster"
    # The mean of the runs is the unweighted mean of the per-run STS, its interval from the runs.
    assert paired["runs_mean"] == pytest.approx(sum(paired["runs"]) / 2)
    assert paired["runs_mean_ci"][0] <= paired["runs_mean"] <= paired["runs_mean_ci"][1]
    assert interval_violations(report) == []
    assert "pst" in report and "annotators" in report and untyped_keys(report) == []  # TypedDicts name every key


def test_average_gender_and_neutrality(pst_report: tuple[Any, dict[str, Any]], api: APIClient) -> None:
    campaign, report = pst_report
    single = report["pst"]["gender_balance"]["single"]
    # single: 2 samples x 4 identities; feminine: nanny x2; masculine: pilot, ceo x2 + nurse sample 0;
    # cannot identify: nurse sample 1.
    assert (single["female"], single["male"], single["na"]) == (2, 5, 1)
    assert single["average_gender"] == pytest.approx((2 - 5) / 7)
    assert single["average_gender_ci_method"] == "wilson-deff"
    assert single["neutrality_ci_method"] == "neutrality-test-inversion"
    nurse = single["neutrality_by_identity"]["nurse"]
    assert (nurse["male"], nurse["female"], nurse["neutral"]) == (1, 0, 1)
    assert nurse["neutrality"] == pytest.approx((0 + 1) / (1 + 2))  # (min(m, f) + n) / (max(m, f) + m + f + n)
    assert single["neutrality"] == pytest.approx((0 + 0 + 0 + 1 / 3) / 4)
    # Every setting, each with its interval (the vectorised bootstrap: metrics.core.vlm.neutrality).
    assert set(report["pst"]["gender_balance"]) == {"single", "paired"}
    paired = report["pst"]["gender_balance"]["paired"]
    assert paired["neutrality_ci_method"] == "neutrality-test-inversion"
    assert paired["female"] + paired["male"] + paired["na"] > 0
    assert paired["neutrality_ci"][0] <= paired["neutrality"] <= paired["neutrality_ci"][1]
    # A setting with identities near balance (male and female shares within 2 s.e.) has its interval flagged
    # conservative (DOMAIN_RULES), the others not.
    flagged = {w["path"] for w in report["warnings"] if "Neutrality interval is valid but conservative" in w["message"]}
    near = {f"pst.gender_balance.{k}.neutrality_ci" for k, b in report["pst"]["gender_balance"].items()
            if b["neutrality_near_balance"] >= 1}
    assert flagged == near and single["neutrality_near_balance"] <= 4
    html = api.get(f"/api/campaigns/{campaign.pk}/report/?format=html&n_boot=50").content.decode()
    assert 'id="gender-balance"' in html and "Average Gender" in html
    blob = api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=50").content
    rows = _zip_csv(blob, "pst_gender_balance.csv")
    top = next(r for r in rows if r["setting"] == "single" and r["identity"] == "")
    assert float(top["average_gender"]) == pytest.approx(-3 / 7) and top["neutrality_ci_method"] == "neutrality-test-inversion"


def test_agreement_per_identity(pst_report: tuple[Any, dict[str, Any]], api: APIClient) -> None:
    campaign, report = pst_report
    by = report["agreement"]["by_identity"]
    assert set(by) == {"pilot", "ceo", "nurse", "nanny"}
    # every question of an identity is in its subset: 2 single + 2 paired images x 2 positions... per identity
    assert sum(b["questions"] for b in by.values()) == report["agreement"]["overall"]["questions"]
    html = api.get(f"/api/campaigns/{campaign.pk}/report/?format=html&n_boot=0").content.decode()
    assert 'id="agreement-subsets"' in html and "Agreement per identity" in html
    rows = _zip_csv(api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=0").content,
                    "agreement_subsets.csv")
    assert {r["name"] for r in rows} == set(by) and {r["subset"] for r in rows} == {"identity"}


def three_gender_label(q: Any) -> str:
    """dress: woman always, person on sample 0 only, man never; tie: man always, others never."""
    g, a, s = q.metadata["gender"], q.metadata["attribute"], q.metadata["sample_index"]
    if a == "dress":
        return "Yes" if g == "woman" or (g == "person" and s == 0) else "No"
    return "Yes" if g == "man" else "No"


def test_gep_with_three_genders_reports_distances_from_the_baseline(researcher: User, api: APIClient) -> None:
    spec = copy.deepcopy(SMALL_GEP)
    spec["design"].update(settings=["neutral"], genders=[{"name": "woman", "phrase": "A woman"},
                                                         {"name": "man", "phrase": "A man"},
                                                         {"name": "person", "phrase": "A person"}],
                          baseline_gender="person")
    campaign, questions = campaign_with_questions(researcher, spec)
    answer_all(campaign, questions, three_gender_label, annotators(3))
    full = report_build(campaign=campaign, options=ReportOptions(n_boot=200))
    assert untyped_keys(full) == []
    gep = full["gep"]
    assert gep["genders"] == ["woman", "man", "person"] and gep["baseline_gender"] == "person"
    assert gep["genders_in_vector"] == ["woman", "man"]
    d = gep["distances"]["neutral"]
    # woman - person: dress 1 - 0.5, tie 0 - 0 -> 0.25; man - person: dress 0 - 0.5, tie 1 - 0 -> 0.75
    assert d["rows"]["woman"]["score"] == pytest.approx(0.25) and d["rows"]["man"]["score"] == pytest.approx(0.75)
    assert d["ranking"] == ["woman", "man"] and d["rows"]["man"]["vector"] == {"dress": -0.5, "tie": 1.0}
    assert d["rows"]["woman"]["score_ci_method"] == "gep-test-inversion"
    assert interval_violations(gep) == []
    html = api.get(f"/api/campaigns/{campaign.pk}/report/?format=html&n_boot=50").content.decode()
    assert 'id="gep-distances"' in html and "Distance from the baseline gender (person" in html
    rows = _zip_csv(api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=50").content, "gep_distances.csv")
    assert {(r["gender"], r["attribute"]) for r in rows} == {("woman", "dress"), ("woman", "tie"), ("man", "dress"),
                                                             ("man", "tie")}
    # default baseline: the first gender
    spec2 = copy.deepcopy(spec)
    del spec2["design"]["baseline_gender"]
    spec2["name"] = "three-default"
    c2, q2 = campaign_with_questions(researcher, spec2)
    answer_all(c2, q2, three_gender_label, annotators(3))
    gep2 = report_build(campaign=c2, options=ReportOptions(n_boot=0))["gep"]
    assert gep2["baseline_gender"] == "woman" and gep2["distances"]["neutral"]["ranking"] == ["person", "man"]


def test_a_baseline_gender_outside_the_design_is_refused(api: APIClient) -> None:
    spec = copy.deepcopy(SMALL_GEP)
    spec["design"]["baseline_gender"] = "robot"
    resp = api.post("/api/campaigns/", spec, format="json")
    assert resp.status_code == 400 and "design.baseline_gender" in resp.json()["errors"]


def test_agreement_per_attribute(researcher: User) -> None:
    from tests.builders.metrics import gep_label

    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3))
    report = report_build(campaign=campaign, options=ReportOptions(n_boot=0))
    assert set(report["agreement"]["by_attribute"]) == {"dress", "tie"} and "by_identity" not in report["agreement"]
