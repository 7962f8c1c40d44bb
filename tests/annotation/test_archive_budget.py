"""The campaign archive through the request work budget (annotation/services/archiving.py): the request
counts the archived rows before any work; within REQUEST_WORK_BUDGET_S it builds the archive as before
(200), above it a worker builds and stores it (202 with progress, then 200 with the stored zip). The
stored archive is keyed by the archive revision, which moves with every write of what the archive holds
(also the writes the report's data revision does not see: enrollments, consents, qualification tests
and attempts); deletion over the budget is a 409 until the stored archive of the current revision
exists. Decisions are asserted, never times.

Each change below runs in its own savepoint (`transaction.atomic`): the test's rows are all written in
one outer transaction, and only a (sub)transaction of its own gives a row a new `xmin`, as every
committed write does in production."""
from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F

from annotation import archive
from annotation.models import (
    Answer,
    Enrollment,
    ExampleImage,
    Qualification,
    QualificationAttempt,
    QualificationItem,
    Question,
)
from annotation.services import archiving
from annotation.tasks import campaign_archive_build_task
from campaigns.models import Campaign, Prompt
from generation.models import Image
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db


def _rows(blob: bytes, member: str) -> list[dict[str, Any]]:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return [json.loads(line) for line in zf.read(member).decode().splitlines()]


def _body(response: Any) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def campaign(researcher: Any, media: Any) -> Campaign:  # media: stored archives land in a fresh folder
    c = make_campaign(researcher, kind="gep")
    make_images(c, "neutral", 2)
    with transaction.atomic():
        open_campaign(c)
    annotator, _ = make_annotator("arch-a", campaign=c)
    question = Question.objects.filter(campaign=c).first()
    assert question is not None
    with transaction.atomic():
        Answer.objects.create(campaign=c, question=question, annotator=annotator, choice=question.choices[0])
    with transaction.atomic():
        q = Qualification.objects.create(campaign=c, name="q", family="attribute:x")
        QualificationItem.objects.create(qualification=q, image=question.image, position=0, text="t", choices=["a", "b"],
                                         correct="a")
    return c


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """Tasks sent; building the archive in the request fails the test (until a test puts it back)."""
    sent: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(archiving, "task_send", lambda name, args: sent.append((name, args)))
    monkeypatch.setattr(archive, "campaign_export", lambda **kw: pytest.fail("archive built in the request"))
    return sent


def _over_budget(settings: Any, campaign: Campaign) -> None:
    settings.REQUEST_WORK_BUDGET_S = archiving.archive_estimate(archiving.archive_state(campaign)).seconds * 0.99


def _worker(monkeypatch: pytest.MonkeyPatch, campaign: Campaign) -> None:
    monkeypatch.setattr(archive, "campaign_export", REAL_EXPORT)
    campaign_archive_build_task.run(campaign.pk)
    monkeypatch.setattr(archive, "campaign_export", lambda **kw: pytest.fail("archive built in the request"))


REAL_EXPORT = archive.campaign_export


def test_the_estimate_counts_the_archived_rows(campaign: Campaign) -> None:
    state = archiving.archive_state(campaign)
    assert state.counts["answers"] == 1 and state.counts["images"] == 2 and state.counts["enrollments"] == 1
    assert state.counts["questions"] == Question.objects.filter(campaign=campaign).count() > 0
    assert state.counts["items"] == 1 and state.counts["attempts"] == 0
    small = archiving.archive_estimate(state).seconds
    make_images(campaign, "neutral", 2, offset=2)
    assert archiving.archive_estimate(archiving.archive_state(campaign)).seconds == pytest.approx(
        small + 2 * archiving.ARCHIVE_PER_ROW_S["images"])


def test_a_small_archive_is_built_in_the_request(api: Any, campaign: Campaign) -> None:
    resp = api.get(f"/api/campaigns/{campaign.pk}/export/")
    assert resp.status_code == 200 and resp["Content-Type"] == "application/zip"
    assert len(_rows(resp.content, "answers.jsonl")) == 1


def test_a_large_archive_is_built_by_a_worker_with_progress_then_served(
        api: Any, campaign: Campaign, settings: Any, queued: list[tuple[str, list[Any]]],
        django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _over_budget(settings, campaign)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.get(f"/api/campaigns/{campaign.pk}/export/")
    assert resp.status_code == 202, resp.content
    assert resp.json() == {"id": campaign.pk, "status": "building", "progress": 0.0}
    assert queued == [("annotation.campaign_archive_build", [campaign.pk])]
    again = api.get(f"/api/campaigns/{campaign.pk}/export/")  # while the worker runs: its progress, no new task
    assert again.status_code == 202 and len(queued) == 1
    seen: list[float] = []
    real_set = cache.set
    monkeypatch.setattr(archiving.cache, "set", lambda k, v, **kw: seen.append(v) or real_set(k, v, **kw))
    _worker(monkeypatch, campaign)
    assert seen and seen == sorted(seen) and 0 < seen[-1] < 1
    assert archiving.archive_progress(campaign) is None  # the claim is released
    done = api.get(f"/api/campaigns/{campaign.pk}/export/")  # the stored archive, nothing built here
    assert done.status_code == 200 and done["Content-Disposition"].endswith(f'campaign-{campaign.pk}-archive.zip"')
    blob = _body(done)
    inline = REAL_EXPORT(campaign=campaign)
    for member in ("prompts", "images", "questions", "annotators", "answers", "qualifications", "examples"):
        assert _rows(blob, f"{member}.jsonl") == _rows(inline, f"{member}.jsonl"), member


def _enroll(c: Campaign) -> None:
    make_annotator("arch-new", campaign=c)


def _consent(c: Campaign) -> None:
    Enrollment.objects.filter(campaign=c).update(consent_text="changed consent")


def _block(c: Campaign) -> None:
    Enrollment.objects.filter(campaign=c).update(status=Enrollment.Status.BLOCKED)


def _attempt(c: Campaign) -> None:
    q = Qualification.objects.get(campaign=c)
    QualificationAttempt.objects.create(qualification=q, annotator=Enrollment.objects.filter(campaign=c).first().annotator,
                                        answers=["a"], correct=1, total=1, passed=True)


def _qualification(c: Campaign) -> None:
    Qualification.objects.filter(campaign=c).update(pass_fraction=0.5)


def _item(c: Campaign) -> None:
    QualificationItem.objects.filter(qualification__campaign=c).update(correct="b")


def _required(c: Campaign) -> None:
    Question.objects.filter(pk=Question.objects.filter(campaign=c).first().pk).update(required=F("required") + 1)


def _answer(c: Campaign) -> None:
    a = Answer.objects.filter(campaign=c).first()
    Answer.objects.create(campaign=c, question=a.question, annotator=make_annotator("arch-b")[0], choice=a.choice)


def _image(c: Campaign) -> None:
    Image.objects.filter(campaign=c).update(attempts=F("attempts") + 1)


def _prompt(c: Campaign) -> None:
    Prompt.objects.filter(pk=Prompt.objects.filter(campaign=c).first().pk).update(text="changed prompt")


def _example(c: Campaign) -> None:
    ExampleImage.objects.create(campaign=c, family="attribute:x", image=Image.objects.filter(campaign=c).first(), answer="a")


def _name(c: Campaign) -> None:
    Campaign.objects.filter(pk=c.pk).update(name="renamed")


CHANGES: dict[str, tuple[Callable[[Campaign], None], str]] = {
    "new enrollment": (_enroll, "annotators"), "consent": (_consent, "annotators"), "block": (_block, "annotators"),
    "qualification attempt": (_attempt, "qualifications"), "qualification test": (_qualification, "qualifications"),
    "qualification item": (_item, "qualifications"), "question required": (_required, "questions"),
    "answer": (_answer, "answers"), "image row": (_image, "images"), "prompt": (_prompt, "prompts"),
    "example": (_example, "examples"), "campaign name": (_name, "manifest")}


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_archived_change_gets_a_fresh_archive(
        change: str, api: Any, campaign: Campaign, settings: Any, queued: list[tuple[str, list[Any]]],
        django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written straight to the table (no revision bump): the archive revision still moves, the stored
    archive is not served, and the next build holds the change."""
    _over_budget(settings, campaign)
    _worker(monkeypatch, campaign)
    first = _body(api.get(f"/api/campaigns/{campaign.pk}/export/"))
    write, member = CHANGES[change]
    before = archiving.archive_state(campaign).revision
    with transaction.atomic():
        write(campaign)
    assert archiving.archive_state(campaign).revision != before
    with django_capture_on_commit_callbacks(execute=True):
        stale = api.get(f"/api/campaigns/{campaign.pk}/export/")
    assert stale.status_code == 202 and len(queued) == 1  # the stored archive is out of date: built again
    _worker(monkeypatch, campaign)
    fresh = _body(api.get(f"/api/campaigns/{campaign.pk}/export/"))
    if member == "manifest":
        with zipfile.ZipFile(io.BytesIO(fresh)) as zf:
            assert json.loads(zf.read("manifest.json"))["campaign"]["name"] == "renamed"
    else:
        assert _rows(fresh, f"{member}.jsonl") != _rows(first, f"{member}.jsonl")
    assert len(default_storage.listdir(archiving.PREFIX)[1]) >= 1
    assert not any(n.startswith(f"campaign-{campaign.pk}-") and f"{archiving.PREFIX}/{n}" != archiving._stored_name(
        campaign, archiving.archive_state(campaign).revision) for n in default_storage.listdir(archiving.PREFIX)[1])


def test_question_counters_do_not_move_the_archive(campaign: Campaign) -> None:
    """`assigned` / `completed` move with every HIT and are not in the archive."""
    before = archiving.archive_state(campaign).revision
    with transaction.atomic():
        Question.objects.filter(campaign=campaign).update(assigned=F("assigned") + 1, completed=F("completed") + 1)
    assert archiving.archive_state(campaign).revision == before


def test_deleting_over_the_budget_waits_for_the_stored_archive(
        api: Any, campaign: Campaign, settings: Any, queued: list[tuple[str, list[Any]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _over_budget(settings, campaign)
    refused = api.delete(f"/api/campaigns/{campaign.pk}/")
    assert refused.status_code == 409, refused.content
    assert f"/api/campaigns/{campaign.pk}/export/" in refused.json()["detail"]
    assert queued == [("annotation.campaign_archive_build", [campaign.pk])]  # its build started
    campaign.refresh_from_db()
    assert campaign.deleted_at is None  # nothing hidden before its archive exists
    _worker(monkeypatch, campaign)
    stored = _body(api.get(f"/api/campaigns/{campaign.pk}/export/"))
    deleted = api.delete(f"/api/campaigns/{campaign.pk}/")
    assert deleted.status_code == 204
    campaign.refresh_from_db()
    assert campaign.deleted_at is not None
    kept = sorted(n for n in default_storage.listdir("archives")[1] if n.startswith(f"campaign-{campaign.pk}-"))
    with default_storage.open(f"archives/{kept[-1]}", "rb") as handle:
        assert handle.read() == stored
