"""The report's build path: a report (or comparison) still building answers 202 JSON whatever format was
asked, and the sections are computed from the extracted data
without a query (`metrics/sections/` reads no database)."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from campaigns.models import Campaign
from metrics.extract import campaign_data
from metrics.extract.machine import machine_data
from metrics.options import ReportOptions
from metrics.sections.report import report_from_data
from metrics.sections.sources import source_report
from metrics.snapshots.report import report_get
from tests.builders.metrics import (
    SMALL_GEP,
    SMALL_PST,
    annotators,
    answer_all,
    campaign_with_questions,
    gep_label,
    stereotyped,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def pst_campaign(researcher: User) -> Campaign:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, stereotyped, annotators(3))
    return campaign


@pytest.fixture
def gep_campaign(researcher: User) -> Campaign:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3, "g-"))
    return campaign


@pytest.mark.parametrize("fmt", ["json", "csv", "html"])
def test_a_report_still_building_answers_202_json_whatever_the_format(
        api: APIClient, pst_campaign: Campaign, monkeypatch: pytest.MonkeyPatch, settings: Any, fmt: str) -> None:
    from metrics import tasks

    settings.REQUEST_WORK_BUDGET_S = 0  # every report over the request work budget
    monkeypatch.setattr(tasks.report_build_task, "apply_async", lambda *a, **kw: None)
    for _ in range(2):  # the claim, then the snapshot found building
        resp = api.get(f"/api/campaigns/{pst_campaign.pk}/report/?n_boot=20&format={fmt}")
        assert resp.status_code == 202
        assert resp["Content-Type"].startswith("application/json"), resp["Content-Type"]
        body = resp.json()
        assert body["status"] == "building" and set(body) == {"status", "progress", "snapshot"}, body


@pytest.mark.parametrize("fmt", ["json", "csv", "html"])
def test_a_comparison_still_building_answers_202_json_whatever_the_format(
        api: APIClient, pst_campaign: Campaign, researcher: User, settings: Any, monkeypatch: pytest.MonkeyPatch,
        fmt: str) -> None:
    from metrics import tasks

    other, questions = campaign_with_questions(researcher, {**SMALL_PST, "name": "other"})
    answer_all(other, questions, stereotyped, annotators(3, "o-"))
    for campaign in (pst_campaign, other):  # the reports in the request (the tests alone go to the worker)
        report_get(campaign=campaign, options=ReportOptions.from_params({"n_boot": "0"}))
    settings.REQUEST_WORK_BUDGET_S = 0
    monkeypatch.setattr(tasks.compare_build_task, "apply_async", lambda *a, **kw: None)
    resp = api.get(f"/api/reports/compare/?campaigns={pst_campaign.pk},{other.pk}&test=permutation&draws=100"
                   f"&n_boot=0&format={fmt}")
    assert resp.status_code == 202 and resp["Content-Type"].startswith("application/json")
    assert resp.json()["status"] == "building"


@pytest.mark.parametrize("kind", ["pst", "gep"])
def test_sections_are_built_from_the_extracted_data_without_a_query(
        pst_campaign: Campaign, gep_campaign: Campaign, kind: str, django_assert_num_queries: Any) -> None:
    campaign = pst_campaign if kind == "pst" else gep_campaign
    options = ReportOptions(n_boot=20, n_perm=20)
    data = campaign_data(campaign, exclude_blocked=options.exclude_blocked)
    with django_assert_num_queries(0):
        report = report_from_data(data, options)
        assert source_report(data, None, options) == report
    assert report["counts"]["answers"] > 0 and (kind in report)
    assert "annotators" in report  # the registered further sections ran too


def test_a_machine_source_is_built_from_the_extracted_data_without_a_query(
        gep_campaign: Campaign, django_assert_num_queries: Any) -> None:
    from autolabel.models import MachineLabel

    MachineLabel.objects.bulk_create([MachineLabel(campaign=gep_campaign, question=q, labeller="clip_cls",
                                                   choice=q.choices[0], score=0.7)
                                      for q in gep_campaign.questions.filter(is_gold=False)])
    for source in ("clip_cls", "hybrid:clip_cls"):
        options = ReportOptions(n_boot=20, source=source)
        data = campaign_data(gep_campaign, exclude_blocked=options.exclude_blocked)
        mdata = machine_data(gep_campaign, data, options.labeller)
        with django_assert_num_queries(0):
            report = source_report(data, mdata, options)
        assert report["source"]["name"] == source and "clip_cls" in report["auto"]


def test_no_section_module_imports_a_database_reader() -> None:
    """Statically too: `metrics/sections/` imports no ORM, model, selector, extraction reader or
    snapshot (the dataclasses of `metrics.extract.data` / `.machine` are what it computes from)."""
    import ast
    from pathlib import Path

    import metrics.sections

    allowed_extract = {"metrics.extract.data", "metrics.extract.machine"}
    files = sorted(Path(metrics.sections.__file__).parent.glob("*.py"))
    assert len(files) >= 15
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                assert not name.startswith("django.db"), (path.name, name)
                assert not name.endswith((".models", ".selectors")), (path.name, name)
                assert not name.startswith(("metrics.snapshots", "metrics.package")), (path.name, name)
                assert not name.startswith("metrics.extract") or name in allowed_extract, (path.name, name)
