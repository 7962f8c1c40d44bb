"""The request work budget on a comparison with further label sources (`source=a,b`: each campaign's
report for every source compared): a source's report over the budget is queued (202) before any
comparison work, never built in the request."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from metrics.compare import services as compare_services
from metrics.models import ReportSnapshot
from metrics.snapshots import report as report_services
from metrics.snapshots import store as snapshot_store
from tests.builders.machine import machine_labels
from tests.builders.metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label

pytestmark = pytest.mark.django_db


def test_a_source_report_over_the_budget_is_queued_not_built_in_the_request(
        api: APIClient, researcher: User, settings: Any, monkeypatch: pytest.MonkeyPatch,
        django_capture_on_commit_callbacks: Any) -> None:
    ids = []
    for k in range(2):
        campaign, questions = campaign_with_questions(researcher, {**SMALL_GEP, "name": f"bud-src-{k}"})
        answer_all(campaign, questions, gep_label, annotators(3, f"bs{k}-"))
        machine_labels(campaign, "clip_cls", gep_label, flip=0.1, seed=k)
        ids.append(campaign.pk)
    base = f"/api/reports/compare/?campaigns={ids[0]},{ids[1]}&n_boot=50"
    assert api.get(base).status_code == 200  # the human reports: small, built and stored in the request
    reports = ReportSnapshot.objects.exclude(options_key__startswith="compare:")
    assert reports.filter(status=ReportSnapshot.Status.READY).count() == 2
    queued: list[str] = []
    monkeypatch.setattr(snapshot_store, "task_send", lambda name, args: queued.append(name))
    monkeypatch.setattr(compare_services, "compare_payload", lambda **kw: pytest.fail("compared in the request"))
    real_build = report_services.report_build
    built: list[str] = []
    monkeypatch.setattr(report_services, "report_build",
                        lambda **kw: built.append(kw["options"].source) or real_build(**kw))
    settings.REQUEST_WORK_BUDGET_S = 0  # every report not yet stored is over it
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.get(f"{base}&source=human,clip_cls")
    assert resp.status_code == 202 and resp.json()["status"] == "building", resp.content
    assert queued == ["metrics.report_build", "metrics.report_build"] and built == []  # one per campaign
    snaps = ReportSnapshot.objects.filter(status=ReportSnapshot.Status.BUILDING)
    assert sorted(s.options["source"] for s in snaps) == ["clip_cls", "clip_cls"]
