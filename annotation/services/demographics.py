"""Writes of self-reported demographics: an annotator's answers for a campaign (with the consent
version of that campaign) and the withdrawal that erases them and the profile's (the task answers
stay). The profile's answers (PATCH /api/annotators/me/, the first format) are written by
`annotators.annotator_update` under the same rules (`demographics.validate_profile`)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns.models import Campaign
from common.errors import ApplicationError, ConflictError

from ..demographics import release_shrinks, validate_answers
from ..models import Annotator, DemographicsRelease, DemographicsResponse, Enrollment
from ..people import release_moved, release_sizes
from ..spec_section import annotation_settings
from .annotators import ForbiddenError
from .derived import annotator_data_changed, revision_bump


def _raise(errors: dict[str, list[str]]) -> None:
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid input: {first}: {errors[first][0]}", errors=errors)


@transaction.atomic
def demographics_submit(*, annotator: Annotator, campaign: Campaign, consent: Any, consent_version: Any,
                        answers: Any) -> DemographicsResponse:
    """Store (or replace) the annotator's answers for the campaign with the consent version shown to
    them. Refused: a campaign that does not ask (409), an annotator who did not consent to the campaign
    (403), `consent` not true or a consent version that is not the campaign's current one (400 naming
    `consent` / `consent_version`: the text changed, reload), answers outside the vocabulary (400
    `answers.<field>`). Nothing is written when refused."""
    cfg = annotation_settings(campaign)["demographics"]
    if not cfg["ask"]:
        raise ConflictError("This campaign does not ask for demographics.", errors={"demographics": ["not asked"]})
    if not Enrollment.objects.filter(campaign=campaign, annotator=annotator, consented_at__isnull=False).exists():
        raise ForbiddenError("Consent to the campaign first (POST /api/campaigns/{id}/consent/).",
                             errors={"consent": ["not given"]})
    errors: dict[str, list[str]] = {}
    if consent is not True:
        errors["consent"] = ["Must be true: you agree to the demographics consent text."]
    if consent_version != cfg["consent_version"]:
        errors["consent_version"] = [f"The consent text changed (current version {cfg['consent_version']!r}); "
                                     "reload the page and read it again."]
    clean, answer_errors = validate_answers(answers, cfg["fields"])
    _raise({**errors, **answer_errors})
    now = timezone.now()
    response, _ = DemographicsResponse.objects.update_or_create(
        annotator=annotator, campaign=campaign,
        defaults={"answers": clean, "consent_version": cfg["consent_version"], "consented_at": now})
    revision_bump(campaign_ids=[campaign.pk])
    return response


@transaction.atomic
def demographics_withdraw(*, annotator: Annotator) -> dict[str, Any]:
    """Erase the annotator's demographics everywhere (every campaign's answers and the profile's);
    their task answers stay. Only the time of the withdrawal is kept (audit). Idempotent."""
    now: datetime = timezone.now()
    erased = (DemographicsResponse.objects.filter(annotator=annotator).exclude(answers={})
              .update(answers={}, withdrawn_at=now, updated_at=now))
    rows = DemographicsResponse.objects.filter(annotator=annotator).update(withdrawn_at=now)
    had_profile = bool(annotator.demographics)
    Annotator.objects.filter(pk=annotator.pk).update(demographics={}, demographics_consented_at=None,
                                                     demographics_withdrawn_at=now)
    annotator.demographics, annotator.demographics_consented_at = {}, None
    annotator.demographics_withdrawn_at = now
    annotator_data_changed(annotator_id=annotator.pk)
    return {"withdrawn_at": now, "campaigns": rows, "erased": erased + int(had_profile)}


@transaction.atomic
def demographics_release_cut(*, campaign: Campaign, reason: str) -> DemographicsRelease:
    """Cut the campaign's next numbered demographics release (docs/security.md, "Demographics release
    rule"): every annotator who consented to the campaign so far. Allowed when at least the campaign's
    `min_group` of them are not in the previous release (plus one for each member of the previous
    release who withdrew or changed answers since), and no shown cell would let the difference name
    where such a member was (`demographics.release_shrinks`); or, for the first release only, when the
    campaign is closed. Otherwise a 409 naming `release` (nothing is cut). Locks the campaign row (one
    cut at a time)."""
    Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
    cfg = annotation_settings(campaign)["demographics"]
    previous = DemographicsRelease.objects.filter(campaign=campaign).order_by("-number").first()
    members = sorted(Enrollment.objects.filter(campaign=campaign, consented_at__isnull=False)
                     .values_list("annotator_id", flat=True))
    new = set(members) - set(previous.members if previous else [])
    moved = release_moved(previous, members)
    needed = cfg["min_group"] + moved
    first_at_close = previous is None and campaign.status == Campaign.Status.CLOSED and bool(members)
    if len(new) < needed and not first_at_close:
        raise ConflictError(
            f"A new demographics release needs at least {needed} annotators who are not in the previous one "
            f"({cfg['min_group']}, plus {moved} who withdrew or changed their answers since); {len(new)} joined since.",
            errors={"release": [f"{len(new)} new of {needed} needed"]})
    sizes, reported = release_sizes(campaign=campaign, members=members)
    shrinking = release_shrinks(previous.sizes, sizes, cfg["min_group"], moved) if previous is not None else []
    if shrinking and previous is not None:  # (shrinking is empty without a previous release)
        raise ConflictError(
            f"A new demographics release now would show where an annotator who withdrew (or changed an answer) "
            f"was: {', '.join(shrinking)}. It waits for more annotators.",
            errors={"release": [f"a group of {f} would shrink since release {previous.number}" for f in shrinking]})
    revision_bump(campaign_ids=[campaign.pk])  # the report's annotators section reads the release
    return DemographicsRelease.objects.create(
        campaign=campaign, number=(previous.number + 1) if previous else 1, reason=reason,
        min_group=cfg["min_group"], members=members, sizes=sizes, reported=reported)


def demographics_release_at_close(*, campaign: Campaign) -> DemographicsRelease | None:
    """The release a campaign's close cuts when the rule allows it (else none: the last one stands)."""
    try:
        return demographics_release_cut(campaign=campaign, reason="close")
    except ConflictError:
        return None
