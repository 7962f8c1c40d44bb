"""The portable HIT engine: the ORM version of next and submit, the reference behaviour. SQLite (the
demo) runs it, PostgreSQL runs it when the `hit_engine` fast path is off, and the contract tests
(`tests/contracts/test_hit_engine_contract.py`) hold `pg.py` to it. Heartbeat and return have only
this version (not hot). Every function expects the transaction `annotation.hits` opens.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import IntegrityError, connection
from django.db.models import CharField, Exists, F, OuterRef, Q, QuerySet, Value
from django.db.models.functions import MD5, Cast, Collate, Concat
from django.utils import timezone

from campaigns.models import Campaign
from common.errors import ConflictError, NotFoundError
from generation.selectors import image_url

from ..models import (
    Annotator,
    Answer,
    Assignment,
    AssignmentItem,
    ExampleImage,
    Qualification,
    QualificationAttempt,
    Question,
)
from ..services.annotators import enrollment_for_work
from ..services.derived import submit_derive
from ..services.leases import assignments_release, leases_reclaim
from ..services.quality import annotator_quality_check
from ..spec_section import annotation_settings
from . import rules
from .rules import Candidate, HitPayload, Item, SubmitResult

# A Candidate's fields, in its order, as ORM lookups from a question.
CANDIDATE_FIELDS = ("id", "text", "choices", "image_id", "image__web_file", "image__file", "image__source_url", "slot",
                    "family", "setting")


def candidates(qs: QuerySet[Question], limit: int, *, prefix: str = "") -> list[Candidate]:
    """The first `limit` rows of `qs` as Candidates (`prefix` when `qs` is not on questions)."""
    return [Candidate(*row) for row in qs.values_list(*(prefix + f for f in CANDIDATE_FIELDS))[:limit]]


def held_hit(*, annotator: Annotator, campaign_id: int, now: datetime) -> Assignment | None:
    """The annotator's active, unexpired HIT in the campaign (the newest), if any."""
    return (Assignment.objects.filter(annotator=annotator, campaign_id=campaign_id,
                                      status=Assignment.Status.ACTIVE, expires_at__gt=now)
            .order_by("-created_at").first())


def assignment_payload(assignment: Assignment) -> HitPayload:
    """A stored HIT as the annotator sees it (their held HIT handed out again)."""
    rows = [Candidate(*row) for row in AssignmentItem.objects.filter(assignment=assignment).order_by("position")
            .values_list(*(f"question__{f}" for f in CANDIDATE_FIELDS))]
    return rules.hit_payload(hit_id=assignment.pk, expires_at=assignment.expires_at, questions=rows,
                             image_url=image_url)


def gold_ordered(qs: QuerySet[Question], salt: str) -> QuerySet[Question]:
    """Gold questions in the campaign's common order (`rules.gold_order_key` of `rules.gold_common_salt`:
    md5 of salt || id, byte order)."""
    digest = MD5(Concat(Value(salt), Cast("id", output_field=CharField())))
    key: MD5 | Collate = Collate(digest, "C") if connection.vendor == "postgresql" else digest
    return qs.annotate(gold_key=key).order_by("gold_key", "id")


def _unseen(annotator: Annotator) -> Exists:
    return Exists(AssignmentItem.objects.filter(question=OuterRef("pk"), annotator=annotator))


def next_hit(*, annotator: Annotator, campaign_id: int, rng: random.Random) -> tuple[HitPayload | None, bool]:
    """`annotation.hits.assignment_next` through the ORM (its docstring has the rules and locks)."""
    now = timezone.now()
    leases_reclaim(campaign_id=campaign_id, now=now)
    enrollment = enrollment_for_work(annotator=annotator, campaign_id=campaign_id, lock=True)
    campaign = enrollment.campaign
    rules.refuse_closed(campaign.status)
    current = held_hit(annotator=annotator, campaign_id=campaign_id, now=now)
    if current is not None:
        return assignment_payload(current), False
    cfg = annotation_settings(campaign)
    unqualified = list(Qualification.objects.filter(campaign_id=campaign_id)
                       .filter(~Exists(QualificationAttempt.objects.filter(
                           qualification=OuterRef("pk"), annotator=annotator, passed=True)))
                       .values_list("family", flat=True))
    # The pool: room left (assigned < required), image not excluded and not an example, family
    # qualified, never seen.
    pool = (Question.objects.filter(campaign_id=campaign_id, assigned__lt=F("required"), image__excluded=False)
            .exclude(Q(image__web_file="") & ~Q(image__file=""))  # no web rendition yet: never the original
            .filter(~Exists(ExampleImage.objects.filter(image_id=OuterRef("image_id"))))
            .exclude(family__in=unqualified).filter(~_unseen(annotator)))
    k = cfg["hit_size"]
    pst = campaign.kind == Campaign.Kind.PST
    rows = candidates(pool.filter(is_gold=False).order_by(*rules.pool_order_fields())
                      .select_for_update(skip_locked=True, of=("self",), no_key=True),
                      rules.pool_limit(pst=pst, k=k, gold_rate=cfg["gold_rate"]))
    if not rows:
        return None, False
    common = rules.gold_common_salt(campaign_seed=campaign.seed)
    questions, real_ids = rules.hit_compose(
        rows, pst=pst, k=k, gold_rate=cfg["gold_rate"], rng=rng,
        salt=rules.gold_salt(campaign_seed=campaign.seed, annotator_id=annotator.pk),
        gold=lambda n: candidates(gold_ordered(pool.filter(is_gold=True), common), n))
    assignment = Assignment.objects.create(campaign_id=campaign_id, annotator=annotator,
                                           expires_at=now + timedelta(minutes=cfg["lease_minutes"]))
    AssignmentItem.objects.bulk_create([
        AssignmentItem(assignment=assignment, question_id=q.id, annotator=annotator, position=i)
        for i, q in enumerate(questions)])
    Question.objects.filter(pk__in=real_ids).update(assigned=F("assigned") + 1)
    return rules.hit_payload(hit_id=assignment.pk, expires_at=assignment.expires_at, questions=questions,
                             image_url=image_url), True


def items_of(assignment: Assignment) -> list[Item]:
    return [Item(*row) for row in AssignmentItem.objects.filter(assignment=assignment)
            .values_list("question_id", "status", "question__choices", "question__is_gold")]


def retake(released: Sequence[int]) -> int:
    """Late submission: `assigned + 1` on every released question that still has room; how many."""
    return Question.objects.filter(pk__in=released, assigned__lt=F("required")).update(assigned=F("assigned") + 1)


def submit(*, annotator: Annotator, assignment_id: int, answers: object) -> tuple[SubmitResult, bool, int]:
    """`annotation.hits.answers_submit` through the ORM (its docstring has the rules and locks): (result,
    duplicate, the HIT's campaign)."""
    assignment = (Assignment.objects.select_for_update(of=("self",), no_key=True).select_related("campaign")
                  .filter(pk=assignment_id, annotator=annotator).first())
    if assignment is None:
        raise NotFoundError(f"Assignment {assignment_id} not found.")
    rules.refuse_deleted(deleted=assignment.campaign.deleted_at is not None, campaign_id=assignment.campaign_id)
    items = items_of(assignment)
    parsed, digest, early = rules.submit_check(
        assignment_id=assignment.pk, status=assignment.status, digest=assignment.submission_digest,
        submitted_at=assignment.submitted_at, reward=assignment.reward, items=items, answers=answers,
        blind=annotation_settings(assignment.campaign) if annotator.is_link_account else None)
    if early is not None:
        return early, True, assignment.campaign_id
    released = rules.released(items)
    if released:
        rules.retaken_check(retake(released), released)
    campaign = assignment.campaign
    cfg = annotation_settings(campaign)
    now = timezone.now()
    try:
        Answer.objects.bulk_create([
            Answer(campaign_id=campaign.pk, question_id=p.question, annotator=annotator, assignment=assignment,
                   choice=p.choice, time_ms=p.time_ms, created_at=now)
            for p in parsed])
    except IntegrityError as exc:  # an original answer exists already (e.g. imported): never overwrite
        raise rules.already_answered() from exc
    AssignmentItem.objects.filter(assignment=assignment).update(status=AssignmentItem.Status.ANSWERED)
    real_ids = rules.real_ids(items)
    Question.objects.filter(pk__in=real_ids).update(completed=F("completed") + 1)
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    assignment.submission_digest = digest
    assignment.reward = rules.reward(cfg, len(parsed))
    assignment.save(update_fields=["status", "submitted_at", "submission_digest", "reward"])
    submit_derive(campaign_id=campaign.pk, question_ids=real_ids, cfg=cfg)
    annotator_quality_check(campaign=campaign, annotator=annotator, cfg=cfg)
    return rules.submit_result(id=assignment.pk, status=assignment.status, submitted_at=now,
                               reward=assignment.reward, answers=len(parsed)), False, campaign.pk


def heartbeat(*, annotator: Annotator, assignment_id: int) -> Assignment:
    """`annotation.hits.assignment_heartbeat` (both engines)."""
    assignment = (Assignment.objects.select_for_update(of=("self",), no_key=True).select_related("campaign")
                  .filter(pk=assignment_id, annotator=annotator).first())
    if assignment is None:
        raise NotFoundError(f"Assignment {assignment_id} not found.")
    if assignment.status != Assignment.Status.ACTIVE:
        raise ConflictError(f"This HIT is {assignment.status}; its lease cannot be extended.",
                            errors={"status": [assignment.status]})
    cfg = annotation_settings(assignment.campaign)
    assignment.expires_at = timezone.now() + timedelta(minutes=cfg["lease_minutes"])
    assignment.save(update_fields=["expires_at"])
    return assignment


def give_back(*, annotator: Annotator, assignment_id: int) -> Assignment:
    """`annotation.hits.assignment_return` (both engines)."""
    assignment = (Assignment.objects.select_for_update(no_key=True)
                  .filter(pk=assignment_id, annotator=annotator).first())
    if assignment is None:
        raise NotFoundError(f"Assignment {assignment_id} not found.")
    if assignment.status != Assignment.Status.ACTIVE:
        raise ConflictError(f"This HIT is {assignment.status}.", errors={"status": [assignment.status]})
    assignments_release([assignment.pk], status=Assignment.Status.RETURNED)
    assignment.status = Assignment.Status.RETURNED
    return assignment
