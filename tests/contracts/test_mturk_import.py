"""Contract: the MTurk batch import writes the same database state whether its rows go in by COPY with
sequence-reserved ids (the PostgreSQL fast path `mturk_import`; its foreign keys checked in bulk or by
the per-row triggers) or by bulk_create (the portable twin, what SQLite runs). Each twin imports the
same file into the same state (a savepoint rolled back in between); the states are compared by natural
keys (ids differ: sequences do not roll back).

The file has what an export can have: Approved, Submitted and Rejected (skipped) rows, two campaigns
in one file, a worker who is already an annotator, one whose `mturk-<id>` username is taken, a
question answered by more workers than its R (R is raised), fractional work times, rewards with a
dollar sign, and ids and URLs with commas, quotes, tabs and non-ASCII text."""
from __future__ import annotations

import csv
import io
from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from annotation.models import AggregatedLabel, Annotator, Answer, Assignment, AssignmentItem, Question
from campaigns.models import Campaign
from common import fastpath
from crowd.models import MTurkAssignmentRecord
from crowd.mturk_batch import mturk_batch_import
from generation.models import Image
from tests.builders.metrics import SMALL_GEP, campaign_with_questions

pytestmark = pytest.mark.django_db

MAPPING = {"slots": 2, "image_url": "Input.image_url{k}",
           "choices": {"Yes": "Answer.Yes{k}.1", "No": "Answer.No{k}.0"},
           "question": {"column": "Input.attribute", "by": "attribute_phrase"}, "skip_statuses": ["Rejected"]}
WORKERS = ["W1", "W2", "W3", "W-4", "W_5", "W6"]  # MTurk worker ids (the links' rule: common.accounts)


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the contract runs both twins on PostgreSQL; CI runs it there")


def _campaigns(owner: User) -> list[Campaign]:
    out = []
    for n in (1, 2):
        campaign, _ = campaign_with_questions(owner, {**SMALL_GEP, "name": f"mturk-contract-{n}"})
        for image in Image.objects.filter(campaign=campaign):
            Image.objects.filter(pk=image.pk).update(source_url=f"https://img.example/{n}/{image.pk},\"ü\".png")
        out.append(campaign)
    return out


def _batch(campaigns: list[Campaign]) -> bytes:
    """Rows of two neutral images each (one from each campaign in every other row), one attribute."""
    urls = [list(Image.objects.filter(campaign=c, prompt__setting="neutral").order_by("pk")
                 .values_list("source_url", flat=True)) for c in campaigns]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(["HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "WorkTimeInSeconds", "Reward",
                     "Input.image_url0", "Input.image_url1", "Input.attribute", "Answer.Yes0.1", "Answer.No0.0",
                     "Answer.Yes1.1", "Answer.No1.0", "Approve"])
    n = 0
    for h in range(6):
        phrase = ("in a dress", "with a tie")[h % 2]
        pair = (urls[0][h], urls[h % 2][h + 1])
        for w, worker in enumerate(WORKERS[:3 + h % 3]):  # 3 to 5 workers: R = 3 is raised for some
            n += 1
            status = "Rejected" if (h, w) == (0, 1) else ("Approved", "Submitted")[n % 2]
            yes0, yes1 = (n + w) % 2 == 0, (n * 7 + h) % 3 == 0
            writer.writerow([f"HIT,{h} \"é\"", f"A\t{n},'x'", f"  {worker} ", status, f"{10 + n}.7",
                             f"${0.05 * (1 + h % 2):.2f}", *pair, phrase,
                             "true" if yes0 else "", "" if yes0 else "true", "on" if yes1 else "",
                             "" if yes1 else "on", ""])
    return buf.getvalue().encode("utf-8")


def _state(campaigns: list[Campaign], window: tuple[datetime, datetime] | None = None) -> dict[str, Any]:
    """The rows the import writes, by natural keys. Times are the import's time: the fast path stamps
    every row with one `now`, the portable one lets `auto_now_add` stamp each row as it is built, so
    a time is compared as "within the import" (`window`), not to the microsecond."""
    ids = [c.pk for c in campaigns]
    workers = dict(Annotator.objects.filter(mturk_worker_id__isnull=False).values_list("pk", "mturk_worker_id"))
    records = {r.assignment_id: r for r in MTurkAssignmentRecord.objects.filter(campaign_id__in=ids)}

    def key(assignment_id: int) -> tuple[Any, ...]:
        r = records[assignment_id]
        return (r.campaign_id, r.mturk_assignment_id)

    assignments = sorted(
        (key(a.pk), workers[a.annotator_id], a.status, a.review, a.review_reason, str(a.reward), str(a.bonus),
         a.external_hit_id, a.external_assignment_id, a.submission_digest,
         a.expires_at == a.submitted_at and _within(a.created_at, window) and _within(a.submitted_at, window))
        for a in Assignment.objects.filter(campaign_id__in=ids))
    return {
        "users": sorted((u.username, u.has_usable_password(), u.is_staff, u.is_active) for u in
                        User.objects.filter(username__startswith="mturk-")),
        "annotators": sorted((a.user.username, a.mturk_worker_id) for a in
                             Annotator.objects.filter(mturk_worker_id__isnull=False).select_related("user")),
        "records": sorted((r.campaign_id, r.mturk_assignment_id, r.mturk_hit_id, r.worker_id, r.status, r.source,
                           _within(r.created_at, window)) for r in records.values()),
        "assignments": assignments,
        "items": sorted((key(i.assignment_id), i.question_id, workers[i.annotator_id], i.position, i.status)
                        for i in AssignmentItem.objects.filter(assignment__campaign_id__in=ids)),
        "answers": sorted((a.campaign_id, a.question_id, workers[a.annotator_id], key(a.assignment_id), a.choice,
                           a.time_ms, a.source, a.corrects_id, _within(a.created_at, window))
                          for a in Answer.objects.filter(campaign_id__in=ids)),
        "questions": sorted(Question.objects.filter(campaign_id__in=ids).values_list("pk", "required", "assigned",
                                                                                     "completed")),
        # The stored labels: the SQL statement (fast path) and the ORM recompute (twin) agree.
        "labels": sorted((label.question_id, label.method, label.label, sorted(label.votes.items()), label.answers,
                          label.tie) for label in AggregatedLabel.objects.filter(question__campaign_id__in=ids)),
    }


def _within(moment: datetime | None, window: tuple[datetime, datetime] | None) -> bool:
    return window is None or (moment is not None and window[0] <= moment <= window[1])


def _import(campaigns: list[Campaign], data: bytes, *, fast: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    sid = transaction.savepoint()
    try:
        with fastpath.forced("mturk_import", fast):
            started = timezone.now()
            result = mturk_batch_import(campaigns=campaigns, data=data, mapping=MAPPING)
            window = (started, timezone.now())
        return result.as_dict(), _state(campaigns, window)
    finally:
        transaction.savepoint_rollback(sid)


def test_copy_and_bulk_create_write_the_same_state(researcher: User) -> None:
    campaigns = _campaigns(researcher)
    existing = User.objects.create_user("someone-else")
    Annotator.objects.create(user=existing, mturk_worker_id="W2", kind=Annotator.Kind.MTURK)  # W2's link account
    User.objects.create_user("mturk-W3")  # the username the import would give W3 is taken: never adopted
    data = _batch(campaigns)
    before = _state(campaigns)
    fast_result, fast = _import(campaigns, data, fast=True)
    assert _state(campaigns) == before  # rolled back
    portable_result, portable = _import(campaigns, data, fast=False)
    assert fast_result == portable_result
    assert fast == portable
    # What the file exercised.
    assert fast_result["skipped_rows"] > 0 and len({c for c, *_ in fast["answers"]}) == 2
    assert any(r[3] == "W-4" for r in fast["records"]) and any(r[3] == "W_5" for r in fast["records"])
    assert ("someone-else", "W2") in fast["annotators"] and ("mturk-W3", "W3") not in fast["annotators"]
    assert any(name.startswith("mturk-W3-") and w == "W3" for name, w in fast["annotators"])
    assert any(required > 3 for _, required, _, _ in fast["questions"])
    assert all(r[-1] for k in ("assignments", "records", "answers") for r in fast[k])
    assert all(r[-1] for k in ("assignments", "records", "answers") for r in portable[k])
    assert {r[5] for r in fast["assignments"]} == {"0.05", "0.10"} and {r[3] for r in fast["assignments"]} == {
        "approved", "pending"}


def test_bulk_reference_check_writes_what_the_per_row_triggers_write(researcher: User,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path checks the rows' foreign keys in bulk (annotation/services/staged.py) when the role
    may; with the per-row triggers instead it stores the same state."""
    from annotation.services import staged

    campaigns = _campaigns(researcher)
    data = _batch(campaigns)
    bulk_result, bulk = _import(campaigns, data, fast=True)
    monkeypatch.setattr(staged, "REFERENCES_CHECKED_IN_BULK", False)
    per_row_result, per_row = _import(campaigns, data, fast=True)
    assert bulk_result == per_row_result and bulk == per_row
    assert len(bulk["answers"]) == bulk_result["answers"] > 0 and len(bulk["items"]) == len(bulk["answers"])
