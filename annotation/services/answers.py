"""Answers written outside a HIT: imports of work done elsewhere (the MTurk batch results, through
`crowd.mturk_batch`) and corrections. With the HIT engines (`annotation.hits`) and the campaign
archive import (`annotation.archive`) these are the only writers of answers; each keeps what is
derived from them current through `annotation.services.derived` in the same transaction (counters,
stored labels, adaptive `required`, the data revision). `crowd` writes no annotation table itself.
"""
from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Lower
from django.utils import timezone

from campaigns.models import Campaign
from common import fastpath
from common.accounts import username_taken
from common.errors import ApplicationError, ConflictError, NotFoundError

from ..models import Annotator, Answer, Assignment, AssignmentItem, Question
from ..spec_section import annotation_settings
from .derived import answers_derive, revision_bump
from .staged import references_checked_in_bulk, staged_answers_write

__all__ = ["ImportedAnswers", "ImportedHit", "answer_correct", "answers_import", "mturk_annotators_ensure", "rows_insert"]


@dataclass
class ImportedHit:
    """One HIT done elsewhere, in one campaign: its worker's annotator, review state, reward, external
    HIT id and answers `(question id, choice, time_ms)` in HIT order."""

    campaign_id: int
    annotator_id: int
    review: str
    reward: Decimal
    external_hit_id: str
    answers: list[tuple[int, str, int]] = field(default_factory=list)


@dataclass
class ImportedAnswers:
    """The answers of imported HITs as columns (a million answers as tuples cost ~150 MB; as arrays
    ~20 MB): one entry per answer, grouped by HIT in HIT order. `hit` indexes the `hits` given with
    them, `choice` indexes `choices`."""

    hit: np.ndarray
    question: np.ndarray
    choice: np.ndarray
    choices: list[str]
    time_ms: np.ndarray

    @classmethod
    def of(cls, hits: Sequence[ImportedHit]) -> ImportedAnswers:
        """The columns of hits that carry their answers as tuples."""
        choices = sorted({c for h in hits for _, c, _ in h.answers})
        code = {c: i for i, c in enumerate(choices)}
        flat = [(i, qid, code[c], ms) for i, h in enumerate(hits) for qid, c, ms in h.answers]
        cols = np.array(flat, dtype=np.int64).reshape(-1, 4)
        return cls(hit=cols[:, 0], question=cols[:, 1], choice=cols[:, 2], choices=choices, time_ms=cols[:, 3])

    def positions(self) -> np.ndarray:
        """Each answer's position in its HIT (0, 1, ...)."""
        n = len(self.hit)
        if not n:
            return np.zeros(0, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, self.hit[1:] != self.hit[:-1]])
        return np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))


def rows_insert(model: Any, columns: list[str], rows: Iterable[tuple[Any, ...]], *, batch_size: int = 5000) -> None:
    """Insert plain tuples without building model instances: COPY on PostgreSQL (fast path
    `mturk_import`), bulk_create elsewhere. A million answers and as many lease rows took ~2 minutes
    and ~1.5 GB as model instances through bulk_create (bench/imports.py); COPY streams them.
    Constraints are checked alike, and errors come out as Django's (IntegrityError)."""
    if not fastpath.enabled("mturk_import"):
        model.objects.bulk_create((model(**dict(zip(columns, row, strict=True))) for row in rows),
                                  batch_size=batch_size)
        return
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(model._meta.get_field(c).column) for c in columns)
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


@transaction.atomic
def mturk_annotators_ensure(*, worker_ids: Sequence[str]) -> dict[str, int]:
    """{worker id: annotator id} of the workers' MTurk link accounts, making the missing ones (username
    `mturk-<id>`, no password). Never a password account that claims the id, never a user who took the
    name `mturk-<id>` first: a taken name gets a stable suffix (random if that is taken too)."""
    User = get_user_model()
    workers = sorted(set(worker_ids))
    link = Annotator.objects.filter(kind=Annotator.Kind.MTURK)
    existing = dict(link.filter(mturk_worker_id__in=workers).values_list("mturk_worker_id", "id"))
    new = [w for w in workers if w not in existing]
    if new:
        names = {w: f"mturk-{w}" for w in new}
        taken = set(User.objects.annotate(lower=Lower("username"))
                    .filter(lower__in=[n.lower() for n in names.values()]).values_list("lower", flat=True))
        for w, name in names.items():
            if name.lower() in taken:
                names[w] = f"{name}-{hashlib.sha256(w.encode()).hexdigest()[:6]}"
                if username_taken(names[w]):
                    names[w] = f"{name}-{secrets.token_hex(3)}"
        users = User.objects.bulk_create([User(username=names[w], password="!") for w in new])
        by_name = {u.username: u for u in users}
        Annotator.objects.bulk_create([Annotator(user=by_name[names[w]], mturk_worker_id=w, kind=Annotator.Kind.MTURK)
                                       for w in new])
        existing.update(link.filter(mturk_worker_id__in=new).values_list("mturk_worker_id", "id"))
    return {str(worker): pk for worker, pk in existing.items()}


def _assignments_insert(hits: Sequence[ImportedHit], now: datetime) -> list[int]:
    if fastpath.enabled("mturk_import"):  # ids taken from the sequence up front, rows COPYed with them
        with connection.cursor() as cursor:
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                           [Assignment._meta.db_table, len(hits)])
            ids = [r[0] for r in cursor.fetchall()]
        # An Assignment's foreign keys (campaign, annotator) checked once per distinct id, not per row.
        with references_checked_in_bulk([(Campaign, {h.campaign_id for h in hits}, True),
                                         (Annotator, {h.annotator_id for h in hits}, True)]):
            rows_insert(Assignment, ["id", "campaign_id", "annotator_id", "status", "created_at", "expires_at",
                                     "submitted_at", "submission_digest", "review", "review_reason", "reward", "bonus",
                                     "external_hit_id"],
                        ((pk, h.campaign_id, h.annotator_id, Assignment.Status.SUBMITTED.value, now, now, now, "",
                          h.review, "", h.reward, Decimal("0"), h.external_hit_id)
                         for pk, h in zip(ids, hits, strict=True)))
        return ids
    return [a.pk for a in Assignment.objects.bulk_create([
        Assignment(campaign_id=h.campaign_id, annotator_id=h.annotator_id, status=Assignment.Status.SUBMITTED,
                   expires_at=now, submitted_at=now, review=h.review, external_hit_id=h.external_hit_id,
                   reward=h.reward)
        for h in hits], batch_size=2000)]


def _counters_add(per_question: Mapping[int, int]) -> None:
    """`assigned` and `completed` + n per question; a question answered by more workers than its R
    gets R raised to that number."""
    if fastpath.enabled("mturk_import"):  # one statement (arrays), not two per chunk and count
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Question._meta.db_table} q SET required = GREATEST(q.required, q.assigned + v.n), "
                "assigned = q.assigned + v.n, completed = q.completed + v.n "
                "FROM unnest(%s::bigint[], %s::int[]) AS v(id, n) WHERE q.id = v.id",
                [list(per_question), list(per_question.values())])
        return
    by_count: dict[int, list[int]] = {}
    for qid, n in per_question.items():
        by_count.setdefault(n, []).append(qid)
    for n, qids in by_count.items():
        for start in range(0, len(qids), 5000):
            chunk = qids[start:start + 5000]
            Question.objects.filter(id__in=chunk, required__lt=F("assigned") + n).update(required=F("assigned") + n)
            Question.objects.filter(id__in=chunk).update(assigned=F("assigned") + n, completed=F("completed") + n)


@transaction.atomic
def answers_import(*, hits: Sequence[ImportedHit], source: str, answers: ImportedAnswers | None = None) -> list[int]:
    """Store HITs done elsewhere as submitted HITs with their leases and answers, in one transaction:
    the counters follow, then the labels of every touched question, adaptive `required` and the data
    revision of every touched campaign (`annotation.services.derived`). The answers come with each
    HIT (`ImportedHit.answers`) or as columns (`answers`, the bulk imports). Returns the new HITs' ids
    in the order given (callers keep their own records of them)."""
    if not hits:
        return []
    cols = answers if answers is not None else ImportedAnswers.of(hits)
    now = timezone.now()
    ids = _assignments_insert(hits, now)
    hit_ids = np.asarray(ids, dtype=np.int64)
    annotator = np.fromiter((h.annotator_id for h in hits), dtype=np.int64, count=len(hits))
    campaign = np.fromiter((h.campaign_id for h in hits), dtype=np.int64, count=len(hits))
    if fastpath.enabled("mturk_import"):
        staged_answers_write(assignment=hit_ids[cols.hit], question=cols.question, annotator=annotator[cols.hit],
                             campaign=campaign[cols.hit], position=cols.positions(), choice=cols.choice,
                             choices=cols.choices, time_ms=cols.time_ms, source=source, now=now)
    else:
        positions = cols.positions()
        rows_insert(AssignmentItem, ["assignment_id", "question_id", "annotator_id", "position", "status"],
                    ((a, q, n, p, AssignmentItem.Status.ANSWERED.value) for a, q, n, p in zip(
                        hit_ids[cols.hit].tolist(), cols.question.tolist(), annotator[cols.hit].tolist(),
                        positions.tolist(), strict=True)))
        rows_insert(Answer, ["campaign_id", "question_id", "annotator_id", "assignment_id", "choice", "time_ms",
                             "source", "created_at"],
                    ((c, q, n, a, cols.choices[k], ms, source, now) for c, q, n, a, k, ms in zip(
                        campaign[cols.hit].tolist(), cols.question.tolist(), annotator[cols.hit].tolist(),
                        hit_ids[cols.hit].tolist(), cols.choice.tolist(), cols.time_ms.tolist(), strict=True)))
        qids, counts = np.unique(cols.question, return_counts=True)
        _counters_add(dict(zip(qids.tolist(), counts.tolist(), strict=True)))
    by_campaign = campaign[cols.hit]
    for campaign_id in np.unique(by_campaign).tolist():
        answers_derive(campaign_id=campaign_id, question_ids=np.unique(cols.question[by_campaign == campaign_id]).tolist(),
                       sql=fastpath.enabled("mturk_import"))
    return ids


@transaction.atomic
def answer_correct(*, answer_id: int, choice: str, source: str = "correction") -> Answer:
    """Correct a stored answer without changing it: answers are append-only, so the correction is a
    new row whose `corrects` links the answer it replaces (the newest of the chain is the one that
    counts). Validates the choice against the question; 409 if the answer was already corrected
    (correct the newest one). Recomputes the question's label and, under adaptive redundancy, its
    `required`; moves the data revision. Locks the corrected answer row."""
    old = Answer.objects.select_for_update().select_related("question").filter(pk=answer_id).first()
    if old is None:
        raise NotFoundError(f"Answer {answer_id} not found.")
    if Answer.objects.filter(corrects=old).exists():
        raise ConflictError(f"Answer {answer_id} was already corrected; correct the newest answer instead.",
                            errors={"answer": ["already corrected"]})
    if choice not in old.question.choices:
        raise ApplicationError(f"{choice!r} is not one of {old.question.choices}.",
                               errors={"choice": [f"must be one of {old.question.choices}"]})
    new = Answer.objects.create(campaign_id=old.campaign_id, question_id=old.question_id, annotator_id=old.annotator_id,
                                assignment_id=old.assignment_id, choice=choice, time_ms=None, corrects=old,
                                source=source)
    if old.question.is_gold:
        revision_bump(campaign_ids=[old.campaign_id])
    else:
        answers_derive(campaign_id=old.campaign_id, question_ids=[old.question_id],
                       cfg=annotation_settings(old.question.campaign))
    return new
