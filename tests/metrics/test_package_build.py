"""The replication package built by a worker (issue 23): 202 with progress while it builds (one build
per campaign and data version, shared by concurrent requests), the zip from storage when ready, a
rebuild when the data changes (the old file removed), a failed build reported and retried."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.test import override_settings
from rest_framework.test import APIClient

from annotation.models import Answer
from metrics.models import PackageBuild
from metrics.package import services
from tests.builders.metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label

pytestmark = pytest.mark.django_db


@override_settings(REQUEST_WORK_BUDGET_S=0)
def test_large_campaign_answers_202_with_progress_then_the_zip(api: APIClient, researcher: User,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               django_capture_on_commit_callbacks: Any) -> None:
    sent: list[tuple[str, list[int]]] = []
    monkeypatch.setattr(services, "task_send", lambda name, args: sent.append((name, list(args))))
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3))
    url = f"/api/campaigns/{campaign.pk}/export/dataset/"
    with django_capture_on_commit_callbacks(execute=True):
        first = api.get(url)
    assert first.status_code == 202 and first["Content-Type"].startswith("application/json")
    body = first.json()
    assert body == {"status": "building", "progress": 0.0, "build": body["build"], "error": None}
    assert sent == [("metrics.package_build", [body["build"]])]
    again = api.get(url)  # still building: the same build, no second task
    assert again.status_code == 202 and again.json()["build"] == body["build"] and len(sent) == 1

    progress: list[float] = []
    real = services.dataset_write

    def spy(**kw: Any) -> Any:
        def step(fraction: float) -> None:
            kw["progress"](fraction)
            progress.append(PackageBuild.objects.get(pk=body["build"]).progress)
        return real(**{**kw, "progress": step})

    monkeypatch.setattr(services, "dataset_write", spy)
    services.package_build_run(build_id=body["build"])  # what the worker runs
    assert progress == sorted(progress) and 0 < progress[0] < progress[-1] <= 0.95
    build = PackageBuild.objects.get(pk=body["build"])
    assert build.status == "ready" and build.progress == 1.0 and build.file.startswith("private/packages/")
    assert build.summary["answers"] == Answer.objects.filter(campaign=campaign).count() and build.size > 0
    done = api.get(url)
    assert done.status_code == 200 and done["Content-Type"] == "application/zip"
    assert b"".join(done.streaming_content)[:2] == b"PK"
    services.package_build_run(build_id=build.pk)  # idempotent: a ready build is left alone
    assert PackageBuild.objects.get(pk=build.pk).file == build.file

    # New data: a new build; once it is ready, the old one and its file are gone.
    Answer.objects.create(campaign=campaign, question=questions[0], annotator=annotators(1, "late")[0], choice="No")
    with django_capture_on_commit_callbacks(execute=True):
        newer = api.get(url)
    assert newer.status_code == 202 and newer.json()["build"] != build.pk
    services.package_build_run(build_id=newer.json()["build"])
    assert not PackageBuild.objects.filter(pk=build.pk).exists() and not default_storage.exists(build.file)
    assert api.get(url).status_code == 200


@override_settings(REQUEST_WORK_BUDGET_S=0)
def test_a_failed_build_is_reported_then_retried(api: APIClient, researcher: User,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "task_send", lambda name, args: None)
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3))
    url = f"/api/campaigns/{campaign.pk}/export/dataset/"
    build_id = api.get(url).json()["build"]

    def broken(**kw: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(services, "dataset_write", broken)
    with pytest.raises(OSError):
        services.package_build_run(build_id=build_id)
    failed = PackageBuild.objects.get(pk=build_id)
    assert failed.status == "failed" and "disk full" in failed.error
    retry = api.get(url)  # the failed build is replaced by a new one
    assert retry.status_code == 202 and retry.json()["build"] != build_id


def test_small_campaign_is_built_in_the_request(api: APIClient, researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3))
    r = api.get(f"/api/campaigns/{campaign.pk}/export/dataset/")
    assert r.status_code == 200 and PackageBuild.objects.get(campaign=campaign).status == "ready"
