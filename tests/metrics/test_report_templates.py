"""Several prompt templates per setting (bias-amplification paper Table 1: four per occupation): the spec
takes a list, every prompt and question records its template, and every PST / GEP figure is broken
down by template (`by_template`) and averaged over templates (`template_mean`); amplification is per
template with the mean over templates. One template (the default) leaves the report as it was."""
from __future__ import annotations

import copy
import csv
import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.models import Question
from annotation.services.lifecycle import questions_open
from campaigns.models import Campaign, Prompt
from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.intervals import interval_violations
from tests.builders.metrics import SMALL_GEP, SMALL_PST, annotators, answer_all, campaign_with_questions, make_images

pytestmark = pytest.mark.django_db
SINGLE = ["A photo of the face of a {id1}.", "A photo of a {id1} smiling.", "A portrait photo of a {id1}."]


def two_template_spec() -> dict[str, Any]:
    spec = copy.deepcopy(SMALL_PST)
    spec["design"]["samples"] = {"single": 2, "paired": 1}
    spec["design"]["templates"] = {"single": SINGLE[:2]}
    spec["references"] = [{"name": "ref", "source": "made up", "percent_female": {
        "pilot": 20, "ceo": 30, "nurse": 80, "nanny": 90}}]
    return spec


def test_the_spec_takes_a_list_of_templates(api: APIClient) -> None:
    spec = two_template_spec()
    resp = api.post("/api/campaigns/", spec, format="json")
    assert resp.status_code == 201, resp.json()
    campaign = Campaign.objects.get(pk=resp.json()["id"])
    # 4 identities x 2 templates single, 4 pairs x 2 orders paired (one template)
    assert resp.json()["prompt_count"] == 8 + 8 and campaign.spec["design"]["templates"]["single"] == SINGLE[:2]
    single = list(Prompt.objects.filter(campaign=campaign, setting="single").order_by("position"))
    assert [(p.key, p.template_index) for p in single if "nurse" in p.key] == [("single:nurse#1", 0),
                                                                             ("single:nurse#2", 1)]
    nurse2 = next(p for p in single if p.key == "single:nurse#2")
    assert nurse2.text == "A photo of a nurse smiling." and nurse2.template == SINGLE[1]
    assert nurse2.metadata["template_index"] == 1 and nurse2.metadata["template"] == SINGLE[1]
    paired = Prompt.objects.filter(campaign=campaign, setting="paired").first()
    assert "#" not in paired.key and "template_index" not in paired.metadata and paired.template_index == 0
    assert paired.template  # the one template's text is recorded too
    # Questions carry the template of their image's prompt.
    make_images(campaign)
    questions_open(campaign=campaign)
    q = Question.objects.filter(campaign=campaign, metadata__prompt_key="single:nurse#2").first()
    assert q.metadata["template_index"] == 1


@pytest.mark.parametrize(("templates", "field"), [
    ({"single": ["A photo of a {id1}.", "A photo of a {id2}."]}, "design.templates.single[1]"),
    ({"single": []}, "design.templates.single"),
    ({"single": ["A photo of a {id1}.", "A photo of a {id1}."]}, "design.templates.single"),
])
def test_bad_template_lists_are_refused(api: APIClient, templates: dict[str, Any], field: str) -> None:
    spec = copy.deepcopy(SMALL_PST)
    spec["design"]["templates"] = templates
    resp = api.post("/api/campaigns/", spec, format="json")
    assert resp.status_code == 400 and field in resp.json()["errors"], resp.json()


def label(q: Any) -> str:
    """Template 1: stereotyped; template 2 (single): the nurse masculine, the pilot feminine."""
    t = q.metadata.get("template_index", 0)
    identity = q.metadata["identity"]
    if t == 1 and identity in ("nurse", "pilot"):
        return "Masculine" if identity == "nurse" else "Feminine"
    return "Masculine" if q.metadata["group"] == "male" else "Feminine"


def test_pst_figures_by_template_and_their_mean(researcher: User, api: APIClient) -> None:
    campaign, questions = campaign_with_questions(researcher, two_template_spec())
    answer_all(campaign, questions, label, annotators(3))
    report = report_build(campaign=campaign, options=ReportOptions(n_boot=200, n_perm=0))
    single = report["pst"]["single"]
    by = single["by_template"]
    assert set(by) == {"1", "2"} and by["1"]["overall"] == 100.0 and by["2"]["overall"] == 0.0
    assert by["2"]["micro"] == {"ceo": 100.0, "nanny": 100.0, "nurse": -100.0, "pilot": -100.0}
    assert by["1"]["persons"] == by["2"]["persons"] == 8 and by["2"]["overall_ci_method"] == "bca-cluster"
    mean = single["template_mean"]
    assert mean["templates"] == 2 and mean["overall"] == 50.0 and mean["micro"]["nurse"] == 0.0
    assert mean["percent_feminine"]["pilot"] == 50.0
    assert single["overall"] == 50.0  # pooled over both templates, as before
    assert "by_template" not in report["pst"]["paired"]  # one template there
    assert interval_violations(report) == []
    # Amplification per template (template 2: pilot and nurse change direction) and over templates.
    amp = report["amplification"]["ref"]
    t1, t2 = amp["templates"]["1"], amp["templates"]["2"]
    assert t1["rows"]["pilot"]["amplification"] == 20.0 and t1["rows"]["nanny"]["amplification"] == 10.0
    assert t1["mean"] == pytest.approx((20 + 30 + 20 + 10) / 4)
    assert t2["excluded"] == {"nurse": "direction change", "pilot": "direction change"}
    assert t2["mean"] == pytest.approx((30 + 10) / 2)
    assert amp["average"] == pytest.approx((20.0 + 20.0) / 2)
    zf = zipfile.ZipFile(io.BytesIO(api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=50").content))
    rows = list(csv.DictReader(io.StringIO(zf.read("pst_template.csv").decode())))
    assert {(r["template"], r["identity"], r["sts"]) for r in rows} >= {("1", "", "100.0"), ("2", "nurse", "-100.0"),
                                                                        ("mean", "", "50.0")}
    answers = zf.read("answers.csv").decode().splitlines()
    assert answers[0].endswith(",template_index")
    html = api.get(f"/api/campaigns/{campaign.pk}/report/?format=html&n_boot=50").content.decode()
    assert "Single setting per prompt template" in html and "mean over 2 templates" in html


def gep_label(q: Any) -> str:
    """Template 1: women in dresses; template 2: nobody in a dress; ties never."""
    t = q.metadata.get("template_index", 0)
    if q.metadata["attribute"] == "dress":
        return "Yes" if q.metadata["gender"] == "woman" and t == 0 else "No"
    return "No"


def test_gep_figures_by_template(researcher: User) -> None:
    spec = copy.deepcopy(SMALL_GEP)
    spec["design"].update(settings=["neutral"], templates={"neutral": ["{gender} {context}.",
                                                                        "A photo of {gender} {context}."]})
    campaign, questions = campaign_with_questions(researcher, spec)
    answer_all(campaign, questions, gep_label, annotators(3))
    gep = report_build(campaign=campaign, options=ReportOptions(n_boot=200))["gep"]["neutral"]
    assert gep["by_template"]["1"]["score"] == 0.5 and gep["by_template"]["2"]["score"] == 0.0
    assert gep["template_mean"]["score"] == 0.25 and gep["template_mean"]["vector"]["dress"] == 0.5
    assert gep["score"] == 0.25 and gep["by_template"]["2"]["score_ci_method"] == "gep-test-inversion"
    assert interval_violations(gep) == []


def test_one_template_leaves_the_report_as_it_was(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, label, annotators(3))
    report = report_build(campaign=campaign, options=ReportOptions(n_boot=0))
    assert all("by_template" not in report["pst"][s] for s in ("single", "paired"))
    assert not Prompt.objects.filter(campaign=campaign, key__contains="#").exists()
