"""Reads of the annotation app: what annotators may see (never prompts, genders, models, other
answers or answer keys) and the researcher's tables (questions, annotators, payments, progress).
Nothing here writes: a GET that reads these tables leaves the database as it was
(tests/annotation/test_read_only.py)."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, F, Max, Q, QuerySet, Sum
from django.utils import timezone

from campaigns.models import Campaign
from common.errors import ApplicationError, NotFoundError
from generation.models import Image
from generation.selectors import annotator_image_url

from .authentication import annotator_by_user
from .families import canonical_example_family, family_instructions
from .models import (
    AggregatedLabel,
    Annotator,
    Answer,
    Assignment,
    Enrollment,
    ExampleImage,
    Qualification,
    QualificationAttempt,
    Question,
)
from .spec_section import annotation_settings

ANNOTATOR_VISIBLE = (Campaign.Status.OPEN, Campaign.Status.PAUSED, Campaign.Status.CLOSED)


def annotator_of(user: AbstractBaseUser | AnonymousUser) -> Annotator:
    """The annotator behind a logged-in user, or 403."""
    annotator = getattr(user, "_annotator_cache", None)
    if annotator is None:
        annotator = annotator_by_user(user) if user.is_authenticated else None  # the session's user
        if annotator is None:
            raise ApplicationError("This endpoint is for annotators (sign up at POST /api/annotators/).",
                                   status_code=403)
        user._annotator_cache = annotator  # type: ignore[union-attr]
    return annotator


def campaign_for_annotator(*, campaign_id: int) -> Campaign:
    """A campaign an annotator may see: open, paused or closed (not drafts, not deleted)."""
    campaign = Campaign.objects.filter(pk=campaign_id, deleted_at__isnull=True, status__in=ANNOTATOR_VISIBLE).first()
    if campaign is None:
        raise NotFoundError(f"Campaign {campaign_id} not found.")
    return campaign


def qualification_status(*, campaign: Campaign, annotator: Annotator | None) -> list[dict[str, Any]]:
    """The campaign's qualification tests with, for an annotator, passed / attempts left / retake_at."""
    quals = list(Qualification.objects.filter(campaign=campaign).annotate(n_items=Count("items")).order_by("pk"))
    attempts: dict[int, list[QualificationAttempt]] = {}
    if annotator is not None:
        for a in QualificationAttempt.objects.filter(qualification__campaign=campaign, annotator=annotator).order_by(
                "-created_at"):
            attempts.setdefault(a.qualification_id, []).append(a)
    out = []
    for q in quals:
        mine = attempts.get(q.pk, [])
        passed = any(a.passed for a in mine)
        retake_at = None
        if mine and not passed and len(mine) < q.max_attempts:
            retake_at = mine[0].created_at + timedelta(minutes=q.retake_after_minutes)
        out.append({"id": q.pk, "name": q.name, "family": q.family, "instructions": q.instructions,
                    "items": q.n_items, "pass_fraction": q.pass_fraction, "max_attempts": q.max_attempts,
                    "retake_after_minutes": q.retake_after_minutes, "passed": passed,
                    "attempts": len(mine), "attempts_left": 0 if passed else max(0, q.max_attempts - len(mine)),
                    "retake_at": retake_at})
    return out


def task_info(*, campaign: Campaign, annotator: Annotator) -> dict[str, Any]:
    """The public task page data: what an annotator needs before and while working."""
    cfg = annotation_settings(campaign)
    enrollment = Enrollment.objects.filter(campaign=campaign, annotator=annotator).first()
    # The spec's `example_images` (any family, no answer), then the examples with their answers.
    examples: list[dict[str, Any]] = [
        {"image_url": annotator_image_url(web_file=w, file=f, source_url=s)}
        for w, f, s in Image.objects.filter(campaign=campaign, pk__in=cfg["example_images"])
        .values_list("web_file", "file", "source_url")
    ]
    examples += [{k: v for k, v in e.items() if k not in ("id", "image")} for e in examples_list(campaign=campaign)]
    return {
        "campaign": {"id": campaign.pk, "name": campaign.name, "kind": campaign.kind, "status": campaign.status},
        "instructions": cfg["instructions"],
        "family_instructions": family_instructions(campaign.kind, cfg["setting_instructions"]),
        "consent_text": cfg["consent_text"],
        "consented": bool(enrollment and enrollment.consented_at),
        "enrollment_status": enrollment.status if enrollment else None,
        "status_reason": enrollment.status_reason if enrollment else "",
        "qualifications": qualification_status(campaign=campaign, annotator=annotator),
        "examples": examples,
        # Whether the task page asks (the form itself: GET /api/campaigns/{id}/demographics/).
        "demographics": cfg["demographics"]["ask"],
        "hit_size": cfg["hit_size"],
        "hit_unit": "images" if campaign.kind == Campaign.Kind.PST else "questions",
        "lease_minutes": cfg["lease_minutes"],
        "reward": cfg["reward"], "reward_per": cfg["reward_per"], "currency": cfg["currency"],
    }


def examples_list(*, campaign: Campaign) -> list[dict[str, Any]]:
    """The campaign's example images by family and order: `id`, `family`, `image` (id, or null for an
    upload), `image_url` (signed, web copy first), `answer`, `caption`."""
    out = []
    for e in ExampleImage.objects.filter(campaign=campaign).select_related("image").order_by("family", "order", "pk"):
        if e.image is not None:
            url = annotator_image_url(web_file=e.image.web_file, file=e.image.file, source_url=e.image.source_url)
        else:
            url = annotator_image_url(web_file=e.web_file, file=e.file)
        out.append({"id": e.pk, "family": canonical_example_family(e.family), "image": e.image_id, "image_url": url, "answer": e.answer,
                    "caption": e.caption})
    return out


def qualification_get(*, qualification_id: int) -> Qualification:
    q = (Qualification.objects.select_related("campaign")
         .filter(pk=qualification_id, campaign__deleted_at__isnull=True).first())
    if q is None:
        raise NotFoundError(f"Qualification {qualification_id} not found.")
    return q


def qualification_list(*, campaign: Campaign, researcher: bool, annotator: Annotator | None) -> list[dict[str, Any]]:
    """Annotators: items without answers; researchers: with the answer key and pass rates."""
    statuses = {s["id"]: s for s in qualification_status(campaign=campaign, annotator=annotator)}
    out = []
    quals = Qualification.objects.filter(campaign=campaign).prefetch_related("items__image").order_by("pk")
    rates: dict[int, dict[str, int]] = {}
    if researcher:
        for row in (QualificationAttempt.objects.filter(qualification__campaign=campaign).values("qualification_id")
                    .annotate(attempts=Count("id"), passed=Count("id", filter=Q(passed=True)),
                              annotators=Count("annotator_id", distinct=True))):
            rates[row["qualification_id"]] = row
    for q in quals:
        items = []
        for item in sorted(q.items.all(), key=lambda i: (i.position, i.pk)):
            entry = {"id": item.pk, "image_url": annotator_image_url(web_file=item.image.web_file, file=item.image.file,
                                                           source_url=item.image.source_url),
                     "text": item.text, "choices": item.choices}
            if researcher:
                entry["image"] = item.image_id
                entry["correct"] = item.correct
            items.append(entry)
        data = {k: v for k, v in statuses[q.pk].items() if researcher is False or k not in ("passed", "attempts",
                                                                                           "attempts_left", "retake_at")}
        data["items"] = items
        if researcher:
            r = rates.get(q.pk, {"attempts": 0, "passed": 0, "annotators": 0})
            data["stats"] = {"attempts": r["attempts"], "passed": r["passed"], "annotators": r["annotators"],
                             "pass_rate": (r["passed"] / r["attempts"]) if r["attempts"] else None}
        out.append(data)
    return out


QUESTION_FILTER_KEYS = ("setting", "family", "slot", "image", "prompt_key", "label", "tie")


def questions_filter(qs: QuerySet[Question], filters: Mapping[str, Any]) -> QuerySet[Question]:
    """Filter questions by setting, family, slot, image (id or list), prompt_key, label, tie; 400
    naming each unknown filter (`filter.<key>`)."""
    unknown = [k for k in filters if k not in QUESTION_FILTER_KEYS]
    if unknown:
        raise ApplicationError(f"Unknown filter {unknown[0]!r}.",
                               errors={f"filter.{k}": [f"allowed: {', '.join(QUESTION_FILTER_KEYS)}"] for k in unknown})
    for key, value in filters.items():
        if key == "image":
            qs = qs.filter(image_id__in=value if isinstance(value, list) else [value])
        elif key == "prompt_key":
            qs = qs.filter(metadata__prompt_key=value)
        elif key == "label":
            qs = qs.filter(label__label=value)
        elif key == "tie":
            qs = qs.filter(label__tie=bool(value))
        else:
            qs = qs.filter(**{key: value})
    return qs


def question_list(*, campaign: Campaign, filters: dict[str, Any] | None = None) -> QuerySet[Question]:
    qs = Question.objects.filter(campaign=campaign).select_related("label").order_by("pk")
    if filters:
        qs = questions_filter(qs, filters)
    return qs


def question_row(q: Question) -> dict[str, Any]:
    try:
        label = q.label
    except AggregatedLabel.DoesNotExist:
        label = None
    return {"id": q.pk, "image": q.image_id, "slot": q.slot, "family": q.family, "text": q.text,
            "choices": q.choices, "metadata": q.metadata, "required": q.required, "assigned": q.assigned,
            "completed": q.completed, "is_gold": q.is_gold, "gold_answer": q.gold_answer or None,
            "label": ({"label": label.label, "votes": label.votes, "answers": label.answers, "tie": label.tie}
                      if label else None)}


def annotator_stats_query(*, campaign_id: int, cfg: Mapping[str, Any]) -> QuerySet[Answer, dict[str, Any]]:
    """Per-annotator aggregates of their current answers: answers, gold answers and correct ones,
    answers faster than `min_time_ms`, and agreement with the (non-tied, 2+ vote) majority."""
    labelled = Q(question__is_gold=False, question__label__tie=False, question__label__answers__gte=2)
    return (Answer.objects.filter(campaign_id=campaign_id, corrected_by__isnull=True)
            .values("annotator_id")
            .annotate(answers=Count("id"),
                      gold=Count("id", filter=Q(question__is_gold=True)),
                      gold_correct=Count("id", filter=Q(question__is_gold=True, choice=F("question__gold_answer"))),
                      fast=Count("id", filter=Q(time_ms__lt=cfg["min_time_ms"])),
                      agree_n=Count("id", filter=labelled),
                      agree=Count("id", filter=labelled & Q(choice=F("question__label__label"))))
            .order_by())


def auto_approvable(*, cfg: Mapping[str, Any], now: datetime) -> Q:
    """The submitted HITs still pending past the campaign's `auto_approve_hours`: what the beat task
    `annotation.assignments_auto_approve` approves (services.review.assignments_auto_approve), and what
    the tables below already count as approved, so a read shows the figures without writing them."""
    return Q(status=Assignment.Status.SUBMITTED, review=Assignment.Review.PENDING,
             submitted_at__lte=now - timedelta(hours=cfg["auto_approve_hours"]))


def annotator_table(*, campaign: Campaign) -> list[dict[str, Any]]:
    """Per-annotator quality and accounting: gold accuracy, agreement with the majority, answers per
    minute, fast answers, HITs, rewards, status and the reason of a pause/block. Four queries, no
    writes: HITs due for auto-approval count as approved (`auto_approvable`) until the beat task
    stores it."""
    cfg = annotation_settings(campaign)
    stats = {r["annotator_id"]: r for r in annotator_stats_query(campaign_id=campaign.pk, cfg=cfg)}
    timing = {r["annotator_id"]: r for r in Answer.objects.filter(campaign=campaign).values("annotator_id").annotate(
        total_ms=Sum("time_ms"), timed=Count("time_ms")).order_by()}
    money = {r["annotator_id"]: r for r in Assignment.objects.filter(campaign=campaign).values("annotator_id").annotate(
        hits=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        approved=Count("id", filter=Q(review=Assignment.Review.APPROVED)
                       | auto_approvable(cfg=cfg, now=timezone.now())),
        rejected=Count("id", filter=Q(review=Assignment.Review.REJECTED)),
        reward=Sum("reward", filter=~Q(review=Assignment.Review.REJECTED) & Q(status=Assignment.Status.SUBMITTED)),
        bonus=Sum("bonus")).order_by()}
    rows = []
    for e in Enrollment.objects.filter(campaign=campaign).select_related("annotator__user").order_by("pk"):
        a = e.annotator
        s = stats.get(a.pk, {})
        t = timing.get(a.pk, {})
        m = money.get(a.pk, {})
        minutes = (t.get("total_ms") or 0) / 60000
        rows.append({
            "id": a.pk, "username": a.user.get_username(), "status": e.status, "status_reason": e.status_reason,
            "consented_at": e.consented_at, "mturk_worker_id": a.mturk_worker_id, "prolific_pid": a.prolific_pid,
            "answers": s.get("answers", 0), "gold_answers": s.get("gold", 0), "gold_correct": s.get("gold_correct", 0),
            "gold_accuracy": (s["gold_correct"] / s["gold"]) if s.get("gold") else None,
            "agreement": (s["agree"] / s["agree_n"]) if s.get("agree_n") else None,
            "agreement_answers": s.get("agree_n", 0), "fast_answers": s.get("fast", 0),
            "answers_per_minute": (t["timed"] / minutes) if minutes else None,
            "hits_submitted": m.get("hits", 0), "hits_approved": m.get("approved", 0),
            "hits_rejected": m.get("rejected", 0),
            "reward_total": f"{Decimal(m.get('reward') or 0):.2f}", "bonus_total": f"{Decimal(m.get('bonus') or 0):.2f}",
        })
    return rows


def annotation_progress(campaign: Campaign) -> dict[str, Any]:
    """Progress counters added to `GET /api/campaigns/{id}/` (registered with campaigns.registry)."""
    now = timezone.now()
    q = Question.objects.filter(campaign=campaign, is_gold=False).aggregate(
        questions=Count("id"),
        questions_complete=Count("id", filter=Q(completed__gte=F("required"))),
        # Kept from humans by a question gate (the spec's autolabel.human_sample): required 0, so
        # they count as complete (nothing is wanted from annotators); machine labels only.
        questions_machine_only=Count("id", filter=Q(required=0)),
    )
    if not q["questions"] and campaign.status not in ANNOTATOR_VISIBLE:
        return {}
    a = Answer.objects.filter(campaign=campaign).aggregate(
        answers=Count("id"), answers_last_hour=Count("id", filter=Q(created_at__gte=now - timedelta(hours=1))))
    active = (Assignment.objects.filter(campaign=campaign, created_at__gte=now - timedelta(hours=1))
              .values("annotator_id").distinct().count())
    flagged = list(Enrollment.objects.filter(campaign=campaign).exclude(status=Enrollment.Status.ACTIVE)
                   .order_by("-status_changed_at").values_list("annotator_id", "status", "status_reason")[:50])
    ties = AggregatedLabel.objects.filter(question__campaign=campaign, question__is_gold=False, tie=True).count()
    return {
        **q, **a, "annotators_active": active,
        "annotators_paused": sum(1 for f in flagged if f[1] == Enrollment.Status.PAUSED),
        "annotators_blocked": sum(1 for f in flagged if f[1] == Enrollment.Status.BLOCKED),
        "labels_tied": ties,
        "annotation_notices": [f"annotator {aid} {status}: {reason}" for aid, status, reason in flagged[:10]],
    }


def payment_rows(*, campaign: Campaign) -> list[dict[str, Any]]:
    """One row per annotator for the payments CSV (HITs due for auto-approval count as approved)."""
    return [
        {"annotator": r["id"], "username": r["username"], "mturk_worker_id": r["mturk_worker_id"] or "",
         "prolific_pid": r["prolific_pid"] or "", "hits": r["hits_submitted"], "approved": r["hits_approved"],
         "rejected": r["hits_rejected"], "reward_total": r["reward_total"], "bonus_total": r["bonus_total"],
         "currency": annotation_settings(campaign)["currency"]}
        for r in annotator_table(campaign=campaign)
    ]


def redundancy_spent(*, campaign: Campaign, fixed_r: int | None = None) -> dict[str, Any]:
    """Answers spent vs the fixed-R design, overall and per setting: {"rule", "fixed_r", "answers",
    "fixed_r_answers", "saved_fraction", "questions", "by_setting": {setting: {...}}}. `answers` are
    the original answers to non-gold questions (corrections are not paid twice); `fixed_r_answers`
    the non-gold questions times `fixed_r` (the campaign's R when fixed, else 3, the papers' design);
    `saved_fraction` = 1 - answers / fixed_r_answers (negative when more was spent)."""
    from .redundancy import redundancy_summary

    redundancy = annotation_settings(campaign)["redundancy"]
    questions = dict(Question.objects.filter(campaign=campaign, is_gold=False).values("setting")
                     .annotate(n=Count("id")).values_list("setting", "n"))
    answers = dict(Answer.objects.filter(campaign=campaign, question__is_gold=False, corrects__isnull=True)
                   .values("question__setting").annotate(n=Count("id")).values_list("question__setting", "n"))
    return redundancy_summary(redundancy, questions=questions, answers=answers, fixed_r=fixed_r)


# How long a client waits before asking again when nothing is left only for now (a 204 with Retry-After).
HIT_RETRY_AFTER_S = 30


def hit_retry_after(*, campaign_id: int, annotator: Annotator) -> int | None:
    """After an empty HIT request: seconds to wait before asking again when more work may still come
    for this annotator, else None (finished). Only under adaptive redundancy: a question they have not
    seen, with answers in flight (`assigned > completed`) and room to grow (`required < max`), may
    want one more answer once those are in (`annotation.services.derived`). One query (two with the
    campaign's settings)."""
    from django.db.models import Exists, OuterRef

    from .models import AssignmentItem
    from .redundancy import is_adaptive

    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return None
    redundancy = annotation_settings(campaign)["redundancy"]
    if not is_adaptive(redundancy):
        return None
    unqualified = (Qualification.objects.filter(campaign_id=campaign_id)
                   .filter(~Exists(QualificationAttempt.objects.filter(qualification=OuterRef("pk"), annotator=annotator,
                                                                       passed=True)))
                   .values("family"))
    pending = (Question.objects.filter(campaign_id=campaign_id, is_gold=False, required__gt=0,
                                       required__lt=redundancy["max"], assigned__gt=F("completed"),
                                       image__excluded=False)
               .filter(~Exists(ExampleImage.objects.filter(image_id=OuterRef("image_id"))))
               .exclude(family__in=unqualified)
               .filter(~Exists(AssignmentItem.objects.filter(question=OuterRef("pk"), annotator=annotator))))
    return HIT_RETRY_AFTER_S if pending.exists() else None


def data_revision(*, campaign_id: int) -> str:
    """The campaign's data revision: `<data_changes>.<answers>.<highest answer id>`. Two queries, read
    before the data a snapshot is built from (a write committed in between makes the next read a new
    revision, never an old one with new data hidden). The answer count catches an insert that commits
    after a higher id did (ids are taken before commit); answers are append-only."""
    changes = Campaign.objects.filter(pk=campaign_id).values_list("data_changes", flat=True).first() or 0
    answers = Answer.objects.filter(campaign_id=campaign_id).aggregate(n=Count("id"), last=Max("id"))
    return f"{changes}.{answers['n']}.{answers['last'] or 0}"
