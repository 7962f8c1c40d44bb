"""The report through its public API, CLI and exports; caching; query counts."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotation.models import Answer, Enrollment
from campaigns.models import Campaign
from generation.models import Image
from metrics.models import ReportSnapshot
from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.metrics import (
    SMALL_GEP,
    SMALL_PST,
    annotators,
    answer_all,
    campaign_with_questions,
    gep_label,
    stereotyped,
)
from tests.conftest import token_client

pytestmark = pytest.mark.django_db

@pytest.fixture
def pst_campaign(researcher: User) -> Campaign:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, stereotyped, annotators(3))
    return campaign


@pytest.fixture
def gep_campaign(researcher: User) -> Campaign:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3))
    return campaign


def test_report_json_has_the_contract_keys(api: APIClient, pst_campaign: Campaign) -> None:
    resp = api.get(f"/api/campaigns/{pst_campaign.pk}/report/?n_boot=100")
    assert resp.status_code == 200, resp.content
    r = resp.json()
    overall = r["agreement"]["overall"]
    for key in ("fleiss_kappa", "krippendorff_alpha", "percent_agreement", "questions", "answers"):
        assert key in overall
    assert set(r["agreement"]["by_setting"]) == {"single", "paired"}
    assert overall["answers"] == 3 * (4 * 2 + 8 * 2)
    pst = r["pst"]
    assert pst["single"]["overall"] == 100.0 and pst["paired"]["overall"] == 100.0  # all stereotyped
    assert isinstance(pst["single"]["runs"], list) and len(pst["single"]["runs"]) == 2
    assert set(pst["single"]["micro"]) == {"pilot", "ceo", "nurse", "nanny"}
    assert set(pst["paired"]["groups"]) == {"male", "female"}
    assert pst["single"]["percent_feminine"]["nurse"] == 100.0 and pst["paired"]["percent_feminine"]["ceo"] == 0.0
    assert pst["gap"]["overall"] == 0.0 and set(pst["gap"]["micro"]) == {"pilot", "ceo", "nurse", "nanny"}
    assert "cannot_identify" in pst["excluded"]["paired"]
    for key in ("overall_ci", "micro_ci", "groups_ci"):
        assert key in pst["paired"]
    assert pst["paired"]["overall_ci"] == [100.0, 100.0] and pst["paired"]["overall_ci_method"] == "bca-cluster"
    assert pst["paired"]["micro_ci_method"] == "wilson-deff" and pst["paired"]["micro_ci"]["nurse"][1] == 100.0
    assert r["campaign"]["synthetic"] is True


def test_gep_report_keys_and_values(api: APIClient, gep_campaign: Campaign) -> None:
    r = api.get(f"/api/campaigns/{gep_campaign.pk}/report/?n_boot=50").json()
    gep = r["gep"]
    assert gep["neutral"]["frequencies"]["woman"]["dress"] == 1.0
    assert gep["neutral"]["frequencies"]["man"]["dress"] == 0.0
    assert gep["neutral"]["vector"] == {"dress": 1.0, "tie": -1.0}
    assert gep["neutral"]["score"] == 1.0 and gep["explicit"]["score"] == 1.0
    assert set(gep["neutral"]["by_context"]) == {"sitting at a table", "riding a bike"}
    assert gep["neutral"]["score_ci"] == [1.0, 1.0] and set(gep["explicit"]["vector_ci"]) == {"dress", "tie"}


def test_report_is_cached_until_new_answers_arrive(api: APIClient, pst_campaign: Campaign) -> None:
    url = f"/api/campaigns/{pst_campaign.pk}/report/?n_boot=20"
    first = api.get(url).json()
    assert ReportSnapshot.objects.filter(campaign=pst_campaign).count() == 1
    with CaptureQueriesContext(connection) as ctx:
        assert api.get(url).json() == first
    assert not any("annotation_answer\" WHERE" in q["sql"] and "choice" in q["sql"] for q in ctx.captured_queries)
    # A new (dissenting) answer from a fourth annotator changes the data: the report is rebuilt.
    q = pst_campaign.questions.filter(setting="single", metadata__identity="pilot").first()
    Answer.objects.create(campaign=pst_campaign, question=q, annotator=annotators(4, "late")[3], choice="Feminine")
    second = api.get(url).json()
    assert second["agreement"]["overall"]["answers"] == first["agreement"]["overall"]["answers"] + 1
    assert ReportSnapshot.objects.filter(campaign=pst_campaign).count() == 1  # the stale one is gone


def test_exclusions_and_blocked_annotators_leave_the_figures(api: APIClient, pst_campaign: Campaign) -> None:
    image = Image.objects.filter(campaign=pst_campaign, prompt__setting="single").first()
    Image.objects.filter(pk=image.pk).update(excluded=True, exclusion_reason="blurry")
    r = report_build(campaign=pst_campaign, options=ReportOptions(n_boot=0))
    assert r["pst"]["single"]["persons"] == 7 and r["counts"]["images_excluded"] == 1
    assert r["pst"]["excluded"]["images_excluded_by_researcher"] == 1
    assert r["counts"]["answers_excluded_images"] == 3
    rater = Answer.objects.filter(campaign=pst_campaign).first().annotator
    Enrollment.objects.create(campaign=pst_campaign, annotator=rater, status=Enrollment.Status.BLOCKED)
    r2 = report_build(campaign=pst_campaign, options=ReportOptions(n_boot=0))
    assert r2["counts"]["answers_blocked"] > 0
    assert r2["counts"]["answers"] == r["counts"]["answers"] - r2["counts"]["answers_blocked"]
    r3 = report_build(campaign=pst_campaign, options=ReportOptions(n_boot=0, exclude_blocked=False))
    assert r3["counts"]["answers"] == r["counts"]["answers"]


def test_corrections_replace_the_answer_they_correct(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    raters = annotators(3)
    answer_all(campaign, questions, stereotyped, raters, dissent_every=0)
    q = questions[0]
    for a in Answer.objects.filter(question=q)[:2]:
        other = "Feminine" if a.choice == "Masculine" else "Masculine"
        Answer.objects.create(campaign=campaign, question=q, annotator=a.annotator, choice=other, corrects=a)
    r = report_build(campaign=campaign, options=ReportOptions(n_boot=0))
    assert r["counts"]["answers"] == 3 * len(questions)  # corrections replace, not add
    assert r["pst"]["single"]["overall"] < 100.0  # the corrected majority is anti-stereotype now


def test_report_query_count_does_not_grow_with_answers(researcher: User) -> None:
    def count(n_raters: int) -> int:
        campaign, questions = campaign_with_questions(researcher, {**SMALL_GEP, "name": f"q{n_raters}"})
        answer_all(campaign, questions, gep_label, annotators(n_raters, f"r{n_raters}-"))
        with CaptureQueriesContext(connection) as ctx:
            report_build(campaign=campaign, options=ReportOptions(n_boot=10))
        return len(ctx.captured_queries)

    small, large = count(3), count(9)
    assert small == large and small <= 6


def test_csv_export_is_a_zip_of_tidy_tables(api: APIClient, pst_campaign: Campaign) -> None:
    resp = api.get(f"/api/campaigns/{pst_campaign.pk}/report/?format=csv&n_boot=20")
    assert resp.status_code == 200 and resp["Content-Type"] == "application/zip"
    zf = zipfile.ZipFile(io.BytesIO(resp.content))
    assert {"answers.csv", "labels.csv", "agreement.csv", "pst_identity.csv", "README.txt"} <= set(zf.namelist())
    answers = zf.read("answers.csv").decode().splitlines()
    assert answers[0].startswith("answer_id,question_id,image_id,annotator_id,choice,time_ms")
    assert len(answers) == 1 + Answer.objects.filter(campaign=pst_campaign).count()
    identity = zf.read("pst_identity.csv").decode().splitlines()
    assert identity[0].replace('"', "").split(",")[:5] == ["setting", "identity", "group", "stereotype", "micro_sts"]
    assert any(line.startswith('"paired","nurse","female","feminine",100.0') for line in identity)


def test_html_report_has_charts_and_tables(api: APIClient, pst_campaign: Campaign, gep_campaign: Campaign) -> None:
    resp = api.get(f"/api/campaigns/{pst_campaign.pk}/report/?format=html&n_boot=20")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/html")
    html = resp.content.decode()
    assert html.count("<svg") >= 3 and "Micro STS per identity" in html and "Synthetic data" in html
    assert "Krippendorff" in html and "Paired vs single" in html
    gep_html = api.get(f"/api/campaigns/{gep_campaign.pk}/report/?format=html&n_boot=20").content.decode()
    assert "symmetric log" in gep_html and gep_html.count("<svg") == 2
    # The interval method is stated next to every interval.
    assert "<td>bca-cluster</td>" in html and "wilson-deff" in html and "<td>gep-test-inversion</td>" in gep_html


def test_bad_parameters_are_named(api: APIClient, pst_campaign: Campaign) -> None:
    resp = api.get(f"/api/campaigns/{pst_campaign.pk}/report/?treatment=lenient&n_boot=-1")
    assert resp.status_code == 400
    assert {"treatment", "n_boot"} <= set(resp.json()["errors"])


def test_other_researchers_get_404(pst_campaign: Campaign, other_researcher: User, plain_user: User) -> None:
    assert token_client(other_researcher).get(f"/api/campaigns/{pst_campaign.pk}/report/").status_code == 404
    assert token_client(plain_user).get(f"/api/campaigns/{pst_campaign.pk}/report/").status_code == 403
    assert APIClient().get(f"/api/campaigns/{pst_campaign.pk}/report/").status_code == 401


def test_compare_campaigns_of_one_kind(api: APIClient, researcher: User, gep_campaign: Campaign,
                                       pst_campaign: Campaign) -> None:
    other, questions = campaign_with_questions(researcher, {**SMALL_GEP, "name": "other-model"})
    answer_all(other, questions, lambda q: "No", annotators(3))
    body = api.get(f"/api/reports/compare/?campaigns={gep_campaign.pk},{other.pk}&n_boot=20").json()
    assert body["kind"] == "gep" and [r["name"] for r in body["rows"]] == ["small-gep", "other-model"]
    assert body["rows"][0]["gep_neutral"] == 1.0 and body["rows"][1]["gep_neutral"] == 0.0
    mixed = api.get(f"/api/reports/compare/?campaigns={gep_campaign.pk},{pst_campaign.pk}")
    assert mixed.status_code == 400 and "mixed kinds" in mixed.json()["errors"]["campaigns"][0]


def test_report_command_writes_each_format(tmp_path: Path, pst_campaign: Campaign) -> None:
    out = tmp_path / "r.json"
    call_command("report", str(pst_campaign.pk), "--format", "json", "--out", str(out), "--n-boot", "20")
    assert json.loads(out.read_text())["pst"]["paired"]["overall"] == 100.0
    call_command("report", str(pst_campaign.pk), "--format", "csv", "--out", str(tmp_path / "r.zip"), "--n-boot", "20")
    assert "labels.csv" in zipfile.ZipFile(tmp_path / "r.zip").namelist()
    call_command("report", str(pst_campaign.pk), "--format", "html", "--out", str(tmp_path / "r.html"))
    assert "<svg" in (tmp_path / "r.html").read_text()


def test_large_reports_are_built_by_a_worker_task(api: APIClient, pst_campaign: Campaign,
                                                  monkeypatch: pytest.MonkeyPatch, settings: Any,
                                                  django_capture_on_commit_callbacks: Any) -> None:
    from metrics import tasks

    settings.REQUEST_WORK_BUDGET_S = 0  # every report over the request work budget
    queued: list[int] = []
    monkeypatch.setattr(tasks.report_build_task, "apply_async", lambda args, **kw: queued.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.get(f"/api/campaigns/{pst_campaign.pk}/report/?n_boot=20")
    assert resp.status_code == 202 and resp.json()["status"] == "building" and len(queued) == 1
    # What the worker runs (the Celery wiring itself is exercised with a real worker in generation's tests).
    tasks.report_build_task.run(queued[0])
    done = api.get(f"/api/campaigns/{pst_campaign.pk}/report/?n_boot=20")
    assert done.status_code == 200 and done.json()["pst"]["paired"]["overall"] == 100.0


def test_answers_csv_fast_path_equals_the_portable_one(pst_campaign: Campaign) -> None:
    """PostgreSQL reads answers.csv's columns with the fast transfer; the portable read must give the
    same file, byte for byte (tests/contracts/test_answers_csv.py covers odd text and every kind of
    answer)."""
    if connection.vendor != "postgresql":
        pytest.skip("the fast path is PostgreSQL's; CI runs it there")
    import csv as csv_module

    from common import fastpath
    from metrics.package.exports import report_csv_zip

    first = Answer.objects.filter(campaign=pst_campaign).order_by("id").first()
    Answer.objects.create(campaign=pst_campaign, question=first.question, annotator=first.annotator,
                          choice='Odd, "quoted"', corrects=first)
    options = ReportOptions(n_boot=0)
    report = report_build(campaign=pst_campaign, options=options)
    fast = zipfile.ZipFile(io.BytesIO(report_csv_zip(campaign=pst_campaign, report=report, options=options)))
    with fastpath.forced("answers_csv", False), fastpath.forced("report_extract", False):
        portable = zipfile.ZipFile(io.BytesIO(report_csv_zip(campaign=pst_campaign, report=report, options=options)))
    assert fast.read("answers.csv") == portable.read("answers.csv")
    a = list(csv_module.reader(io.StringIO(fast.read("answers.csv").decode())))[1:]
    assert len(a) == Answer.objects.filter(campaign=pst_campaign).count()
    assert any(r[4] == 'Odd, "quoted"' and r[11] == str(first.pk) for r in a)
    assert any(r[0] == str(first.pk) and r[12] == "True" for r in a)  # superseded by the correction
