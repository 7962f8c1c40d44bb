"""The researcher's review of work: approve / reject / bonus a HIT, auto-approval after the
campaign's delay (the beat task), and corrections of stored answers (append-only)."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.models import Campaign
from common.errors import ApplicationError, NotFoundError

from ..models import Assignment
from ..selectors import auto_approvable
from ..spec_section import annotation_settings
from .answers import answer_correct  # noqa: F401  (its home is `answers`; kept importable here)


@transaction.atomic
def assignment_review(*, campaign: Campaign, assignment_id: int, action: str, reason: str = "",
                      bonus: Any = None) -> Assignment:
    """Approve or reject (with a reason) a submitted HIT, and/or grant a bonus."""
    assignment = (Assignment.objects.select_for_update().filter(pk=assignment_id, campaign=campaign).first())
    if assignment is None:
        raise NotFoundError(f"Assignment {assignment_id} not found.")
    errors: dict[str, list[str]] = {}
    if action not in ("approve", "reject", "bonus"):
        errors["action"] = ["must be approve, reject or bonus"]
    if action == "reject" and not (isinstance(reason, str) and reason.strip()):
        errors["reason"] = ["a rejection needs a reason"]
    if action in ("approve", "reject") and assignment.status != Assignment.Status.SUBMITTED:
        errors["status"] = [f"only submitted HITs can be reviewed (this one is {assignment.status})"]
    if bonus is not None:
        try:
            bonus_amount = Decimal(str(bonus))
            if isinstance(bonus, bool) or bonus_amount < 0 or bonus_amount > 1000:
                raise ValueError
        except (ValueError, ArithmeticError):
            errors["bonus"] = ["must be an amount from 0 to 1000"]
        else:
            assignment.bonus = bonus_amount.quantize(Decimal("0.01"))
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid review: {first}: {errors[first][0]}", errors=errors)
    if action in ("approve", "reject"):
        assignment.review = Assignment.Review.APPROVED if action == "approve" else Assignment.Review.REJECTED
        assignment.review_reason = reason or ""
        assignment.reviewed_at = timezone.now()
    assignment.save(update_fields=["review", "review_reason", "reviewed_at", "bonus"])
    return assignment


@transaction.atomic
def assignments_auto_approve(*, campaign: Campaign, now: datetime | None = None) -> int:
    """Approve the submitted, still pending HITs older than the campaign's `auto_approve_hours`.
    Run by the beat task `annotation.assignments_auto_approve` (hourly) and before an MTurk sync;
    never by a read (the tables count these HITs as approved meanwhile: `selectors.auto_approvable`)."""
    now = now or timezone.now()
    due = auto_approvable(cfg=annotation_settings(campaign), now=now)
    return Assignment.objects.filter(due, campaign=campaign).update(
        review=Assignment.Review.APPROVED, reviewed_at=now, review_reason="auto-approved")
