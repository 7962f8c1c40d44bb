"""Report snapshots keep their options as data: the worker builds from `snapshot.options`
(`ReportOptions.from_dict`), never from the cache key."""
from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from metrics import tasks
from metrics.models import ReportSnapshot
from metrics.options import ReportOptions
from metrics.snapshots import report as services
from tests.builders.metrics import SMALL_PST, annotators, answer_all, campaign_with_questions, stereotyped

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(researcher: User) -> Any:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, stereotyped, annotators(3))
    return campaign


def _queued(campaign: Any, options: ReportOptions, monkeypatch: pytest.MonkeyPatch,
            django_capture_on_commit_callbacks: Any) -> ReportSnapshot:
    monkeypatch.setattr(settings, "REQUEST_WORK_BUDGET_S", 0)  # every report over the budget
    queued: list[int] = []
    monkeypatch.setattr(tasks.report_build_task, "apply_async", lambda args, **kw: queued.append(args[0]))
    with django_capture_on_commit_callbacks(execute=True):
        state, body = services.report_get(campaign=campaign, options=options)
    assert state == "building" and queued == [body["snapshot"]]
    return ReportSnapshot.objects.get(pk=queued[0])


def test_a_snapshot_stores_its_options_as_data(campaign: Any) -> None:
    options = ReportOptions(n_boot=20, treatment="excluded", seed=3)
    state, report = services.report_get(campaign=campaign, options=options)
    snap = ReportSnapshot.objects.get(campaign=campaign)
    assert state == "ready" and snap.options == options.to_dict() and snap.options_key == options.key()
    assert ReportOptions.from_dict(snap.options) == options and report["options"]["treatment"] == "excluded"


def test_the_worker_builds_from_the_stored_options_not_the_key(campaign: Any, monkeypatch: pytest.MonkeyPatch,
                                                               django_capture_on_commit_callbacks: Any) -> None:
    options = ReportOptions(n_boot=20, n_perm=0, treatment="excluded", seed=9, exclude_blocked=False)
    snap = _queued(campaign, options, monkeypatch, django_capture_on_commit_callbacks)
    assert snap.options == options.to_dict()
    # A key nobody could parse: the worker does not need it.
    ReportSnapshot.objects.filter(pk=snap.pk).update(options_key="opaque|not=parseable|")
    tasks.report_build_task.run(snap.pk)
    snap.refresh_from_db()
    assert snap.status == ReportSnapshot.Status.READY
    assert snap.payload == services.report_build(campaign=campaign, options=options)
    assert snap.payload["options"] == {**options.to_dict(), "seed": 9}


def test_bad_stored_options_fail_the_build_and_say_why(campaign: Any, monkeypatch: pytest.MonkeyPatch,
                                                       django_capture_on_commit_callbacks: Any) -> None:
    snap = _queued(campaign, ReportOptions(n_boot=20), monkeypatch, django_capture_on_commit_callbacks)
    ReportSnapshot.objects.filter(pk=snap.pk).update(options={"n_boot": -1})
    with pytest.raises(Exception, match="n_boot"):
        tasks.report_build_task.run(snap.pk)
    snap.refresh_from_db()
    assert snap.status == ReportSnapshot.Status.FAILED and "n_boot" in snap.error and snap.payload is None
