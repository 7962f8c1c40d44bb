"""Uploads imported through the request work budget (common/upload_jobs.py): the MTurk batch results,
machine labels and image manifests. The request counts the upload's lines before any row is read;
over REQUEST_WORK_BUDGET_S it stores the upload and answers 202 with the job (no import in the
request), the worker runs the same import on the stored bytes, and `GET .../imports/?job=` answers the
result the request would have given (or its 400, for a bad file: nothing written). Decisions are
asserted, never times."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Answer, Question
from autolabel import apis as autolabel_apis
from autolabel.models import MachineLabel
from campaigns.models import Campaign
from campaigns.tasks import upload_import
from common import upload_jobs
from crowd import apis as crowd_apis
from generation import apis as generation_apis
from generation.models import Image
from tests.builders.crowd import MAPPING, M, W, batch_csv, small  # noqa: F401  (small: a fixture)
from tests.conftest import token_client

pytestmark = pytest.mark.django_db
ROWS = [["H1", "A1", "X1", "Submitted", "20", "in boots", W, M, "false", "true", "true", "false"],
        ["H1", "A2", "X2", "Approved", "30", "in boots", W, M, "false", "true", "true", "false"]]


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch, settings: Any, media: Any) -> list[list[Any]]:
    """Over the budget (any upload), tasks captured; an import in the request fails the test."""
    settings.REQUEST_WORK_BUDGET_S = 0.01
    sent: list[list[Any]] = []
    monkeypatch.setattr(upload_jobs, "task_send", lambda name, args: sent.append([name, *args]))
    for module, name in ((crowd_apis, "mturk_batch_import"), (autolabel_apis, "machine_labels_import"),
                         (generation_apis, "images_import")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **kw: pytest.fail("imported in the request"))
        monkeypatch.setattr(module, f"_real_{name}", real, raising=False)
    return sent


def _worker(monkeypatch: pytest.MonkeyPatch, job_id: str) -> None:
    for module, name in ((crowd_apis, "mturk_batch_import"), (autolabel_apis, "machine_labels_import"),
                         (generation_apis, "images_import")):
        monkeypatch.setattr(module, name, getattr(module, f"_real_{name}"))
    upload_import.run(job_id)


def _building(resp: Any, campaign: Campaign, kind: str, queued: list[list[Any]]) -> str:
    assert resp.status_code == 202, resp.content
    body = resp.json()
    assert body == {"id": body["id"], "status": "building", "progress": 0.0, "campaign": campaign.pk, "kind": kind}
    assert queued == [["campaigns.upload_import", body["id"]]]
    return str(body["id"])


def test_the_estimate_counts_the_uploaded_rows() -> None:
    small_file = SimpleUploadedFile("a.csv", b"h\n" + b"r\n" * 9)
    big_file = SimpleUploadedFile("b.csv", b"h\n" + b"r\n" * 999 + b"last")
    assert upload_jobs.upload_lines(small_file) == 10 and upload_jobs.upload_lines(big_file) == 1001
    assert upload_jobs.upload_estimate(big_file, kind="mturk_batch").seconds == pytest.approx(
        upload_jobs.IMPORT_FIXED_S + 1001 * upload_jobs.IMPORT_PER_ROW_S["mturk_batch"])


def test_an_mturk_batch_over_the_budget_is_imported_by_the_worker(
        api: Any, small: Campaign, queued: list[list[Any]], django_capture_on_commit_callbacks: Any,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch, other_researcher: Any) -> None:
    url = f"/api/campaigns/{small.pk}/mturk/import/"
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(url, {"file": SimpleUploadedFile("batch.csv", batch_csv(ROWS)), "mapping": json.dumps(MAPPING)},
                        format="multipart")
    job = _building(resp, small, "mturk_batch", queued)
    assert not Answer.objects.filter(campaign=small).exists()  # nothing imported in the request
    status_url = f"/api/campaigns/{small.pk}/imports/?job={job}"
    assert api.get(status_url).json()["status"] == "building"
    assert token_client(other_researcher).get(status_url).status_code == 404  # the owner's only
    _worker(monkeypatch, job)
    done = api.get(status_url).json()
    assert done["status"] == "done" and done["progress"] == 1.0 and done["result"]["campaigns"] == [small.pk]
    assert Answer.objects.filter(campaign=small).count() == done["result"]["answers"] > 0
    assert not default_storage.listdir(upload_jobs.PREFIX)[1]  # the stored upload is removed


def test_a_bad_file_fails_in_the_worker_with_the_requests_400_and_writes_nothing(
        api: Any, small: Campaign, queued: list[list[Any]], django_capture_on_commit_callbacks: Any,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    bad = [row[:] for row in ROWS]
    bad[1][6] = "https://img.example/unknown.png"
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(f"/api/campaigns/{small.pk}/mturk/import/",
                        {"file": SimpleUploadedFile("batch.csv", batch_csv(bad)), "mapping": json.dumps(MAPPING)},
                        format="multipart")
    job = _building(resp, small, "mturk_batch", queued)
    _worker(monkeypatch, job)
    failed = api.get(f"/api/campaigns/{small.pk}/imports/?job={job}").json()
    assert failed["status"] == "failed" and failed["error"] and failed["errors"]
    assert not Answer.objects.filter(campaign=small).exists()


def test_machine_labels_over_the_budget(api: Any, small: Campaign, queued: list[list[Any]],  # noqa: F811
                                        django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    questions = list(Question.objects.filter(campaign=small).order_by("pk"))
    text = "image,attribute,choice\n" + "".join(f"{q.image_id},{q.slot},Yes\n" for q in questions)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(f"/api/campaigns/{small.pk}/machine-labels/import/",
                        {"file": SimpleUploadedFile("labels.csv", text.encode()), "labeller": "ext"}, format="multipart")
    job = _building(resp, small, "machine_labels", queued)
    assert not MachineLabel.objects.filter(campaign=small).exists()
    _worker(monkeypatch, job)
    done = api.get(f"/api/campaigns/{small.pk}/imports/?job={job}").json()
    assert done["status"] == "done" and done["result"] == {"rows": len(questions), "labeller": "ext"}
    assert MachineLabel.objects.filter(campaign=small, labeller="ext").count() == len(questions)


def test_an_image_manifest_over_the_budget(api: Any, researcher: Any, queued: list[list[Any]],
                                           django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from campaigns.services import campaign_create

    campaign = campaign_create(owner=researcher, spec={
        "name": "m", "kind": "gep", "seed": 1, "design": {"settings": ["neutral"], "samples": 1,
                                                           "contexts": ["sitting at a table"]},
        "backend": {"name": "import"}})
    manifest = (b"prompt_key,sample_index,url\n"
                b"neutral:woman|sitting at a table,0,https://img.example/w.png\n")
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(f"/api/campaigns/{campaign.pk}/images/import/",
                        {"manifest": SimpleUploadedFile("m.csv", manifest)}, format="multipart")
    job = _building(resp, campaign, "images", queued)
    assert not Image.objects.filter(campaign=campaign).exists()
    _worker(monkeypatch, job)
    done = api.get(f"/api/campaigns/{campaign.pk}/imports/?job={job}").json()
    assert done["status"] == "done" and done["result"]["imported"] == 1, done
    assert Image.objects.filter(campaign=campaign, source_url="https://img.example/w.png").count() == 1


def test_within_the_budget_the_import_answers_as_before(api: Any, small: Campaign, settings: Any) -> None:  # noqa: F811
    settings.REQUEST_WORK_BUDGET_S = 5
    resp = api.post(f"/api/campaigns/{small.pk}/mturk/import/",
                    {"file": SimpleUploadedFile("batch.csv", batch_csv(ROWS)), "mapping": json.dumps(MAPPING)},
                    format="multipart")
    assert resp.status_code == 200 and resp.json()["answers"] > 0
    assert api.get(f"/api/campaigns/{small.pk}/imports/").status_code == 400  # ?job= is required
