"""Qualification tests: one per question family; an annotator gets a family's questions only after
passing its test (graded here, with attempts and a retake delay).

An attempt's answer is pass/fail, the number of items, the retake time and the attempts left: never
the number correct (flipping one answer per throw-away account would reveal the key one item at a
time). Retakes are limited per annotator (the test's `max_attempts`, `retake_after_minutes`) and per
client address: at most `annotation.qualification_attempts_per_address` graded attempts in the
campaign from one address within `annotation.qualification_address_hours` (429, `errors.address`).
Addresses are stored as an HMAC (keyed by SECRET_KEY), never raw (QualificationAddressUse)."""
from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from campaigns.models import Campaign
from common.errors import ApplicationError, ConflictError
from common.templates import template_fill
from generation.models import Image

from ..families import family_attribute
from ..models import Annotator, Qualification, QualificationAddressUse, QualificationAttempt, QualificationItem
from ..spec_section import ATTRIBUTE_CHOICES, PERSON_CHOICES, annotation_settings
from .annotators import enrollment_for_work
from .lifecycle import attribute_phrases, question_families


@transaction.atomic
def qualification_create(*, campaign: Campaign, name: str, family: str, items: list[dict[str, Any]],
                         instructions: str = "", pass_fraction: float = 1.0, retake_after_minutes: int = 60,
                         max_attempts: int = 2) -> Qualification:
    """A qualification test for one question family: items are images with the correct answer
    (and optionally their own text/choices; the family's wording and choices by default)."""
    errors: dict[str, list[str]] = {}
    families = question_families(campaign)
    if family not in families:
        errors["family"] = [f"unknown family {family!r} (this campaign has: {', '.join(families[:20])})"]
    elif Qualification.objects.filter(campaign=campaign, family=family).exists():
        raise ConflictError(f"The family {family!r} already has a qualification test.",
                            errors={"family": ["already has a qualification test"]})
    if not isinstance(pass_fraction, (int, float)) or isinstance(pass_fraction, bool) or not 0 < pass_fraction <= 1:
        errors["pass_fraction"] = ["Must be a number in (0, 1]."]
    if not isinstance(items, list) or not items:
        errors["items"] = ["Give at least one item: {\"image\": id, \"correct\": choice}."]
        items = []
    cfg = annotation_settings(campaign)
    phrases = attribute_phrases(campaign)
    image_ids = {it.get("image") for it in items if isinstance(it, Mapping)}
    known = set(Image.objects.filter(campaign=campaign, pk__in=[i for i in image_ids if isinstance(i, int)])
                .values_list("pk", flat=True))
    rows: list[QualificationItem] = []
    for index, item in enumerate(items):
        path = f"items.{index}"
        if not isinstance(item, Mapping):
            errors[path] = ["Must be an object with image, correct (and optional text, choices)."]
            continue
        if item.get("image") not in known:
            errors[f"{path}.image"] = [f"no image {item.get('image')!r} in this campaign"]
        attr = family_attribute(family)
        if attr is not None:
            default_text = template_fill(cfg["questions"]["attribute"], phrase=phrases.get(attr, attr), identity="")
            default_choices = list(ATTRIBUTE_CHOICES)
        else:
            default_text = "Does the person in the image demonstrate feminine or masculine traits?"
            default_choices = list(PERSON_CHOICES)
        text = item.get("text", default_text)
        choices = item.get("choices", default_choices)
        if not isinstance(text, str) or not text.strip():
            errors[f"{path}.text"] = ["Must be a non-empty string."]
        if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str) for c in choices):
            errors[f"{path}.choices"] = ["Must be a list of at least two strings."]
        elif item.get("correct") not in choices:
            errors[f"{path}.correct"] = [f"must be one of {choices}"]
        rows.append(QualificationItem(  # type: ignore[misc]  # image_id: an int once `errors` is empty
            image_id=item.get("image"), position=index, text=text, choices=choices, correct=item.get("correct") or ""))
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid qualification test: {first}: {errors[first][0]}", errors=errors)
    qualification = Qualification.objects.create(
        campaign=campaign, name=name or family, family=family, instructions=instructions or "",
        pass_fraction=float(pass_fraction), retake_after_minutes=retake_after_minutes, max_attempts=max_attempts)
    for row in rows:
        row.qualification = qualification
    QualificationItem.objects.bulk_create(rows)
    return qualification


def _attempt_answers(answers: Any, items: list[QualificationItem]) -> list[str]:
    """Accept a list of choices in item order, or [{"item": id, "choice": ...}]; return choices in order."""
    if not isinstance(answers, list):
        raise ApplicationError("answers must be a list.", errors={"answers": ["Must be a list."]})
    errors: dict[str, list[str]] = {}
    if answers and all(isinstance(a, Mapping) for a in answers):
        by_id = {it.pk: it for it in items}
        chosen: dict[int, Any] = {}
        for index, entry in enumerate(answers):
            item_id = entry.get("item")
            if item_id not in by_id:
                errors[f"answers.{index}.item"] = [f"not an item of this test: {item_id!r}"]
            elif item_id in chosen:
                errors[f"answers.{index}.item"] = ["answered twice"]
            else:
                chosen[item_id] = entry.get("choice")
        ordered = [chosen.get(it.pk) for it in items]
    else:
        ordered = list(answers)
    if len(ordered) != len(items):
        errors["answers"] = [f"expected {len(items)} answers, got {len(ordered)}"]
    else:
        for index, (choice, item) in enumerate(zip(ordered, items, strict=True)):
            if choice is None:
                errors.setdefault("answers", []).append(f"item {item.pk} is not answered")
            elif choice not in item.choices:
                errors[f"answers.{index}"] = [f"{choice!r} is not one of {item.choices}"]
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid answers: {first}: {errors[first][0]}", errors=errors)
    return [str(c) for c in ordered]


def address_digest(address: str) -> str:
    """The stored form of a client address: HMAC-SHA256 keyed by SECRET_KEY (counts without keeping IPs)."""
    return hmac.new(settings.SECRET_KEY.encode(), (address or "").encode(), hashlib.sha256).hexdigest()


def _address_check(*, qualification: Qualification, address: str, now: datetime) -> str:
    """429 when the address used up the campaign's qualification attempts in the window; its digest."""
    cfg = annotation_settings(qualification.campaign)
    limit, hours = cfg["qualification_attempts_per_address"], cfg["qualification_address_hours"]
    digest = address_digest(address)
    used = QualificationAddressUse.objects.filter(campaign_id=qualification.campaign_id, address_hmac=digest,
                                                  created_at__gt=now - timedelta(hours=hours)).count()
    if used >= limit:
        raise ApplicationError(
            f"Too many qualification attempts from your network address ({limit} in {hours} hours); try later.",
            errors={"address": [f"{used} of {limit} attempts in {hours} hours used"]}, status_code=429)
    return digest


@transaction.atomic
def qualification_attempt(*, qualification: Qualification, annotator: Annotator, answers: Any,
                          address: str = "") -> dict[str, Any]:
    """Grade one attempt: {"passed", "total", "retake_at", "attempts_left"} (never the number correct).
    Refused (409) once passed, after `max_attempts`, or before the retake delay; 429 when the client
    `address` has used up the campaign's attempts per address."""
    # Consented and active, and the enrollment locked: one annotator's attempts are serialised.
    enrollment_for_work(annotator=annotator, campaign_id=qualification.campaign_id, lock=True)
    # The test's row locked: attempts of different annotators from one address are counted in turn.
    qualification = (Qualification.objects.select_for_update(no_key=True).select_related("campaign")
                     .get(pk=qualification.pk))
    now = timezone.now()
    previous = list(QualificationAttempt.objects.filter(qualification=qualification, annotator=annotator)
                    .order_by("-created_at"))
    if any(a.passed for a in previous):
        raise ConflictError("You have already passed this qualification test.", errors={"qualification": ["passed"]})
    if len(previous) >= qualification.max_attempts:
        raise ConflictError(f"No attempts left ({qualification.max_attempts} allowed).",
                            errors={"attempts": [f"{len(previous)} of {qualification.max_attempts} used"]})
    delay = timedelta(minutes=qualification.retake_after_minutes)
    if previous and previous[0].created_at + delay > now:
        wait_until = previous[0].created_at + delay
        raise ConflictError(f"You can retake this test at {wait_until.isoformat()}.",
                            errors={"retake_at": [wait_until.isoformat()]})
    digest = _address_check(qualification=qualification, address=address, now=now)
    items = list(qualification.items.order_by("position", "pk"))
    choices = _attempt_answers(answers, items)
    correct = sum(1 for choice, item in zip(choices, items, strict=True) if choice == item.correct)
    total = len(items)
    passed = total > 0 and correct / total >= qualification.pass_fraction - 1e-9
    attempt = QualificationAttempt.objects.create(qualification=qualification, annotator=annotator,
                                                  answers=choices, correct=correct, total=total, passed=passed)
    QualificationAddressUse.objects.create(campaign_id=qualification.campaign_id, address_hmac=digest, created_at=now)
    used = len(previous) + 1
    retake_at: datetime | None = None
    if not passed and used < qualification.max_attempts:
        retake_at = attempt.created_at + delay
    return {"passed": passed, "total": total, "retake_at": retake_at.isoformat() if retake_at else None,
            "attempts_left": 0 if passed else qualification.max_attempts - used}
