"""A comparison over the request work budget (REQUEST_WORK_BUDGET_S) is built by a real Celery worker (default queue, Redis
broker): 202 "building" until the worker stored it, then the same tests the request would compute."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from metrics.compare.build import compare_payload
from metrics.compare.options import CompareOptions
from metrics.models import ReportSnapshot
from metrics.options import ReportOptions
from metrics.snapshots.report import report_get
from tests.builders.metrics import SMALL_PST, annotators, answer_all, campaign_with_questions
from tests.builders.workers import Worker, broker_reset, wait_for
from tests.conftest import token_client

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_large_comparison_is_built_by_a_worker(tmp_path: Path, researcher: User, settings: Any) -> None:
    a, qa = campaign_with_questions(researcher, {**SMALL_PST, "name": "wa"})
    answer_all(a, qa, lambda q: "Masculine" if q.metadata["group"] == "male" else "Feminine", annotators(3))
    b, qb = campaign_with_questions(researcher, {**SMALL_PST, "name": "wb"})
    answer_all(b, qb, lambda q: "Masculine", annotators(3))
    for campaign in (a, b):  # the reports in the request (the tests alone go to the worker here)
        report_get(campaign=campaign, options=ReportOptions())
    settings.REQUEST_WORK_BUDGET_S = 0
    client = token_client(researcher)
    url = f"/api/reports/compare/?campaigns={a.pk},{b.pk}&test=permutation&draws=300&seed=9"
    broker_reset()
    first = client.get(url)
    assert first.status_code == 202 and first.json()["status"] == "building", first.content
    assert client.get(url).json()["snapshot"] == first.json()["snapshot"]  # claimed once, not queued twice
    worker = Worker(tmp_path, queues="default")
    try:
        worker.wait_ready()
        wait_for(lambda: client.get(url).status_code == 200, timeout=120, what="the comparison", worker=worker)
    finally:
        worker.stop()
        broker_reset()
    body = client.get(url).json()
    snap = ReportSnapshot.objects.get(pk=first.json()["snapshot"])
    assert snap.status == ReportSnapshot.Status.READY and snap.build_seconds is not None
    expected = compare_payload(campaigns=[a, b], options=ReportOptions(),
                               compare=CompareOptions(test="permutation", draws=300, seed=9))
    got = body["significance"]["comparisons"][0]["rows"]
    assert got == expected["significance"]["comparisons"][0]["rows"]
    assert body["pooled_agreement"]["krippendorff_alpha"] == pytest.approx(
        expected["pooled_agreement"]["krippendorff_alpha"])
