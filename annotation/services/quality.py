"""Quality control: thresholds on gold accuracy, speed and agreement with the majority (checked at
every submission), and the enrollment statuses they set (paused, blocked) with the researcher's
actions on an annotator."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.models import Campaign
from common.errors import ApplicationError, NotFoundError

from ..models import Annotator, Answer, Assignment, Enrollment
from ..selectors import annotator_stats_query
from ..spec_section import annotation_settings
from .derived import answers_derive, revision_bump
from .leases import assignments_release_of

MIN_ANSWERS_FOR_SPEED = 10


def quality_reasons(stats: Mapping[str, Any], cfg: Mapping[str, Any]) -> list[str]:
    """Which thresholds an annotator's stats fall below (empty when fine or too few answers yet)."""
    reasons = []
    gold, answers, agree_n = stats.get("gold", 0), stats.get("answers", 0), stats.get("agree_n", 0)
    if cfg["min_gold_accuracy"] > 0 and gold >= cfg["min_gold_answers"]:
        accuracy = stats["gold_correct"] / gold
        if accuracy < cfg["min_gold_accuracy"]:
            reasons.append(f"gold accuracy {accuracy:.2f} < {cfg['min_gold_accuracy']} ({stats['gold_correct']}/{gold})")
    if cfg["min_time_ms"] > 0 and answers >= MIN_ANSWERS_FOR_SPEED:
        share = stats["fast"] / answers
        if share > cfg["max_fast_fraction"]:
            reasons.append(f"{share:.0%} of answers faster than {cfg['min_time_ms']} ms")
    if cfg["min_agreement"] > 0 and agree_n >= cfg["min_agreement_answers"]:
        agreement = stats["agree"] / agree_n
        if agreement < cfg["min_agreement"]:
            reasons.append(f"agreement with the majority {agreement:.2f} < {cfg['min_agreement']}")
    return reasons


def quality_checked(cfg: Mapping[str, Any]) -> bool:
    """Whether a campaign's settings check annotators at all (a threshold set and an action)."""
    return bool(cfg["low_quality_action"] != "none" and (
        cfg["min_gold_accuracy"] > 0 or cfg["min_time_ms"] > 0 or cfg["min_agreement"] > 0))


def annotator_quality_check(*, campaign: Campaign, annotator: Annotator, cfg: Mapping[str, Any]) -> str | None:
    """Pause or block the annotator (campaign setting `low_quality_action`) when below a threshold,
    with the reason stored on the enrollment (shown in the annotators table and the progress).
    No query when no threshold is set; one otherwise (more only when the status changes)."""
    if not quality_checked(cfg):
        return None
    stats = next(iter(annotator_stats_query(campaign_id=campaign.pk, cfg=cfg).filter(annotator_id=annotator.pk)), None)
    reasons = quality_reasons(stats or {}, cfg)
    if not reasons:
        return None
    status = Enrollment.Status.BLOCKED if cfg["low_quality_action"] == "block" else Enrollment.Status.PAUSED
    enrollment_status_set(campaign=campaign, annotator_id=annotator.pk, status=status,
                          reason="automatic: " + "; ".join(reasons), only_if_active=True)
    return status


def enrollment_status_set(*, campaign: Campaign, annotator_id: int, status: str, reason: str = "",
                          only_if_active: bool = False) -> int:
    """Set an enrollment's quality status. Pausing or blocking releases the annotator's live HITs;
    blocking (and unblocking) recomputes the labels of the questions they answered when the campaign
    excludes flagged annotators' answers, and re-evaluates their adaptive `required` (a blocked
    annotator's votes no longer count: the question may want another answer). Moves the campaign's
    data revision. Call inside a transaction (the callers are)."""
    qs = Enrollment.objects.filter(campaign=campaign, annotator_id=annotator_id)
    if only_if_active:
        qs = qs.filter(status=Enrollment.Status.ACTIVE)
    before = list(qs.values_list("status", flat=True))
    changed = qs.update(status=status, status_reason=reason[:500], status_changed_at=timezone.now())
    if not changed:
        return 0
    if status != Enrollment.Status.ACTIVE:
        assignments_release_of(campaign_id=campaign.pk, annotator_id=annotator_id)
    cfg = annotation_settings(campaign)
    if cfg["exclude_flagged_answers"] and Enrollment.Status.BLOCKED in (status, *before):
        ids = Answer.objects.filter(campaign=campaign, annotator_id=annotator_id).values_list("question_id", flat=True)
        answers_derive(campaign_id=campaign.pk, question_ids=list(ids), cfg=cfg)
    else:
        revision_bump(campaign_ids=[campaign.pk])
    return changed


@transaction.atomic
def enrollment_action(*, campaign: Campaign, annotator_id: int, action: str, reason: str = "") -> Enrollment:
    """Researcher actions on an annotator: pause, block, resume (back to active), approve (active, and
    every pending submitted HIT of theirs approved)."""
    enrollment = Enrollment.objects.filter(campaign=campaign, annotator_id=annotator_id).first()
    if enrollment is None:
        raise NotFoundError(f"Annotator {annotator_id} has not joined this campaign.")
    target = {"pause": Enrollment.Status.PAUSED, "block": Enrollment.Status.BLOCKED,
              "resume": Enrollment.Status.ACTIVE, "approve": Enrollment.Status.ACTIVE}.get(action)
    if target is None:
        raise ApplicationError("Unknown action.", errors={"action": ["must be pause, block, resume or approve"]})
    if enrollment.status != target:
        enrollment_status_set(campaign=campaign, annotator_id=annotator_id, status=target,
                              reason=reason or f"{action} by researcher")
    if action == "approve":
        Assignment.objects.filter(campaign=campaign, annotator_id=annotator_id, status=Assignment.Status.SUBMITTED,
                                  review=Assignment.Review.PENDING).update(
            review=Assignment.Review.APPROVED, reviewed_at=timezone.now(), review_reason=reason or "approved")
    enrollment.refresh_from_db()
    return enrollment
