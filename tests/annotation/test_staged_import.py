"""The bulk import's staged write (annotation/services/staged.py) checks the foreign keys of its lease
and answer rows in bulk, before the INSERTs, instead of by a trigger per row: a reference to a missing
row must still be refused with nothing written, and the triggers must be back on afterwards."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Annotator, Answer, Assignment, AssignmentItem, Question
from annotation.services import staged
from campaigns.models import Campaign

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the staged write is PostgreSQL's fast path; CI runs it there")


def _write(campaign: Campaign, annotator: Annotator, /, **override: int) -> None:
    """Two answers of one HIT through the staged write; `override` replaces one id in the second."""
    now = timezone.now()
    hit = Assignment.objects.create(campaign=campaign, annotator=annotator, status=Assignment.Status.SUBMITTED,
                                    expires_at=now, submitted_at=now)
    qids = list(Question.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True)[:2])
    ids = {"assignment": hit.pk, "question": qids[1], "annotator": annotator.pk, "campaign": campaign.pk}

    def column(name: str) -> np.ndarray:
        first = qids[0] if name == "question" else ids[name]
        return np.array([first, override.get(name, ids[name])], dtype=np.int64)

    staged.staged_answers_write(assignment=column("assignment"), question=column("question"),
                                annotator=column("annotator"), campaign=column("campaign"),
                                position=np.array([0, 1]), choice=np.array([0, 1]), choices=["No", "Yes"],
                                time_ms=np.array([100, 200]), source="mturk-import", now=now)


def _rows(campaign: Campaign) -> tuple[int, int, list[Any]]:
    return (Answer.objects.filter(campaign=campaign).count(),
            AssignmentItem.objects.filter(assignment__campaign=campaign).count(),
            sorted(Question.objects.filter(campaign=campaign).values_list("pk", "assigned", "completed")))


def _replication_role() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW session_replication_role")
        return str(cursor.fetchone()[0])


def test_bulk_check_writes_the_rows_and_turns_the_triggers_back_on(gep_campaign: Campaign,
                                                                   worker: tuple[Annotator, Any]) -> None:
    with connection.cursor() as cursor:
        assert staged._triggers_skippable(cursor)  # the test database's role may: the bulk path runs
    _write(gep_campaign, worker[0])
    answers, items, questions = _rows(gep_campaign)
    assert (answers, items) == (2, 2)
    assert sorted(c for _, _, c in questions)[-2:] == [1, 1]
    assert _replication_role() == "origin"


@pytest.mark.parametrize("name", ["question", "annotator", "campaign", "assignment"])
def test_a_missing_reference_is_refused_with_nothing_written(gep_campaign: Campaign, worker: tuple[Annotator, Any],
                                                             name: str) -> None:
    before = _rows(gep_campaign)
    with pytest.raises(IntegrityError, match=f"{name}_id"), transaction.atomic():
        _write(gep_campaign, worker[0], **{name: 10**12})
    assert _rows(gep_campaign) == before
    assert _replication_role() == "origin"


def test_without_the_privilege_the_per_row_triggers_check(gep_campaign: Campaign, worker: tuple[Annotator, Any],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staged, "REFERENCES_CHECKED_IN_BULK", False)
    with connection.cursor() as cursor:
        assert not staged._triggers_skippable(cursor)
    before = _rows(gep_campaign)
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the triggers' check, now instead of at COMMIT
        _write(gep_campaign, worker[0], annotator=10**12)
    assert _rows(gep_campaign) == before


# The bulk import's Assignments and MTurk records: `references_checked_in_bulk` around their COPY.
def _hit_rows(campaign_id: int, annotator_id: int) -> None:
    from annotation.services.answers import rows_insert

    now = timezone.now()
    rows_insert(Assignment, ["campaign_id", "annotator_id", "status", "created_at", "expires_at", "submitted_at",
                             "submission_digest", "review", "review_reason", "reward", "bonus", "external_hit_id"],
                [(campaign_id, annotator_id, Assignment.Status.SUBMITTED.value, now, now, now, "", "pending", "",
                  Decimal("0"), Decimal("0"), "")])


def test_assignments_inserted_under_a_bulk_check_turn_the_triggers_back_on(
        gep_campaign: Campaign, worker: tuple[Annotator, Any]) -> None:
    before = Assignment.objects.count()
    with staged.references_checked_in_bulk([(Campaign, [gep_campaign.pk], True), (Annotator, [worker[0].pk], True)]):
        assert _replication_role() == "replica"  # the per-row triggers are off inside the block only
        _hit_rows(gep_campaign.pk, worker[0].pk)
    assert _replication_role() == "origin"
    assert Assignment.objects.count() == before + 1


@pytest.mark.parametrize("missing", ["campaign", "annotator"])
def test_a_bulk_checked_insert_naming_a_missing_row_is_refused_before_writing(
        gep_campaign: Campaign, worker: tuple[Annotator, Any], missing: str) -> None:
    ids = {"campaign": gep_campaign.pk, "annotator": worker[0].pk, missing: 10**12}
    before = Assignment.objects.count()
    with pytest.raises(IntegrityError, match=f"not rows of .*{missing}"), transaction.atomic():
        with staged.references_checked_in_bulk([(Campaign, [ids["campaign"]], True),
                                                (Annotator, [ids["annotator"]], True)]):
            _hit_rows(ids["campaign"], ids["annotator"])
    assert Assignment.objects.count() == before
    assert _replication_role() == "origin"


def test_an_error_inside_the_block_rolls_the_role_back_with_the_savepoint(
        gep_campaign: Campaign, worker: tuple[Annotator, Any]) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        with staged.references_checked_in_bulk([(Campaign, [gep_campaign.pk], True)]):
            _hit_rows(gep_campaign.pk, worker[0].pk)
            _hit_rows(gep_campaign.pk, None)  # type: ignore[arg-type]  # NOT NULL: fails inside the block
    assert _replication_role() == "origin"


def test_the_bulk_import_leaves_no_foreign_key_check_for_commit(gep_campaign: Campaign,
                                                               worker: tuple[Annotator, Any]) -> None:
    """The bulk import writes its Assignments, its leases and answers, then its labels, each under a bulk
    check (the per-row triggers off, then back on): nothing is left for COMMIT's deferred checks."""
    from annotation.services.answers import ImportedAnswers, ImportedHit, answers_import

    qids = list(Question.objects.filter(campaign=gep_campaign).order_by("pk").values_list("pk", flat=True)[:2])
    with CaptureQueriesContext(connection) as queries:
        answers_import(hits=[ImportedHit(campaign_id=gep_campaign.pk, annotator_id=worker[0].pk, review="pending",
                                         reward=Decimal("0"), external_hit_id="H1")], source="mturk-import",
                       answers=ImportedAnswers(hit=np.array([0, 0]), question=np.array(qids), choice=np.array([0, 1]),
                                               choices=["No", "Yes"], time_ms=np.array([1, 2])))
    sql = [q["sql"] for q in queries]
    role = [s for s in sql if "session_replication_role" in s and s.startswith("SET")]
    assert role == ["SET LOCAL session_replication_role = replica", "SET LOCAL session_replication_role = origin"] * 3
    assert _replication_role() == "origin"
