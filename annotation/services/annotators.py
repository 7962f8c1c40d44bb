"""Annotators and consent: sign-up, profile updates, consent to a campaign, and the gate every piece
of annotator work passes (consented, enrollment active)."""
from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from campaigns.models import Campaign
from common.accounts import EXTERNAL_ID_RULE, external_id_valid, username_taken
from common.errors import ApplicationError, NotFoundError

from ..demographics import validate_profile
from ..models import Annotator, Enrollment
from ..selectors import ANNOTATOR_VISIBLE
from ..spec_section import annotation_settings
from .derived import annotator_data_changed


class ForbiddenError(ApplicationError):
    status_code = 403


_UNSET: Any = object()


@transaction.atomic
def annotator_create(*, username: Any, password: Any, consent: Any, mturk_worker_id: str | None = None,
                     prolific_pid: str | None = None) -> tuple[Annotator, str]:
    """Sign up a crowd annotator (a Django user with no researcher role). Returns (annotator, API token)."""
    User = get_user_model()
    errors: dict[str, list[str]] = {}
    if consent is not True:
        errors["consent"] = ["You must agree to take part (consent: true) to sign up."]
    if not isinstance(username, str) or not username.strip():
        errors["username"] = ["This field is required."]
    else:
        try:
            UnicodeUsernameValidator()(username)
        except ValidationError as exc:
            errors["username"] = list(exc.messages)
        if len(username) > 150:
            errors.setdefault("username", []).append("At most 150 characters.")
        elif username_taken(username):  # NFKC + casefold: `ＡＬＩＣＥ` is `alice`
            errors.setdefault("username", []).append("This username is taken.")
    if not isinstance(password, str) or not password:
        errors["password"] = ["This field is required."]
    else:
        try:
            validate_password(password, user=User(username=username if isinstance(username, str) else ""))
        except ValidationError as exc:
            errors["password"] = list(exc.messages)
    for field, value in (("mturk_worker_id", mturk_worker_id), ("prolific_pid", prolific_pid)):
        if value in (None, ""):
            continue
        if not external_id_valid(value):
            errors[field] = [EXTERNAL_ID_RULE]
        elif Annotator.objects.filter(kind=Annotator.Kind.PASSWORD, **{field: value}).exists():
            errors[field] = ["Already attached to another annotator."]
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Cannot sign up: {first}: {errors[first][0]}", errors=errors)
    try:
        with transaction.atomic():  # two sign-ups of one name at once: the LOWER(username) index decides
            user = User.objects.create_user(username=username, password=password)
            annotator = Annotator.objects.create(user=user, mturk_worker_id=mturk_worker_id or None,
                                                 prolific_pid=prolific_pid or None)
    except IntegrityError:
        if username_taken(username):
            raise ApplicationError("Cannot sign up: username: This username is taken.",
                                   errors={"username": ["This username is taken."]}) from None
        raise ApplicationError("Cannot sign up: an external id was attached to another annotator a moment ago.",
                               errors={"mturk_worker_id" if mturk_worker_id else "prolific_pid":
                                       ["Already attached to another annotator."]}) from None
    token = Token.objects.create(user=user)
    return annotator, token.key


@transaction.atomic
def annotator_update(*, annotator: Annotator, mturk_worker_id: Any = _UNSET, prolific_pid: Any = _UNSET,
                     demographics: Any = _UNSET, password: Any = _UNSET) -> Annotator:
    """Attach external ids (MTurk worker id, Prolific id) or optional self-reported demographics.

    Linking or changing an external id needs the account's own password (`password`), not just a
    session or token: a stolen session cannot tie someone's platform id to another account. Accounts
    made by a crowd link (kind mturk / prolific) keep the id they were made for."""
    errors: dict[str, list[str]] = {}
    changes = [(f, v) for f, v in (("mturk_worker_id", mturk_worker_id), ("prolific_pid", prolific_pid))
               if v is not _UNSET and (v or None) != getattr(annotator, f)]
    if changes and annotator.kind != Annotator.Kind.PASSWORD:
        for field, _value in changes:
            errors[field] = ["This account was made by a crowd link: its external ids cannot change."]
    elif changes and (not isinstance(password, str) or not annotator.user.check_password(password)):
        errors["password"] = ["Give the account's password (password) to link or change an external id."]
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid input: {first}: {errors[first][0]}", errors=errors)
    for field, value in (("mturk_worker_id", mturk_worker_id), ("prolific_pid", prolific_pid)):
        if value is _UNSET:
            continue
        if value in (None, ""):
            setattr(annotator, field, None)
            continue
        if not external_id_valid(value):
            errors[field] = [EXTERNAL_ID_RULE]
        elif Annotator.objects.filter(kind=Annotator.Kind.PASSWORD, **{field: value}).exclude(pk=annotator.pk).exists():
            errors[field] = ["Already attached to another annotator."]
        else:
            setattr(annotator, field, value)
    if demographics is not _UNSET:
        # The same rules as the task page's form (docs/annotation.md "Demographics"): the known fields
        # in their vocabulary, stored with the time of this consent; {} erases them like a withdrawal.
        clean, demo_errors = validate_profile(demographics)
        errors.update(demo_errors)
        if not demo_errors:
            now = timezone.now()
            annotator.demographics = clean
            annotator.demographics_consented_at = now if clean else None
            if not clean:
                annotator.demographics_withdrawn_at = now
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid input: {first}: {errors[first][0]}", errors=errors)
    annotator.save()
    if demographics is not _UNSET:
        annotator_data_changed(annotator_id=annotator.pk)
    return annotator


@transaction.atomic
def enrollment_consent(*, annotator: Annotator, campaign: Campaign, consent: Any) -> Enrollment:
    """Record the annotator's consent to a campaign, with the consent text they agreed to. Idempotent."""
    if consent is not True:
        raise ApplicationError("Consent is required to take part (consent: true).",
                               errors={"consent": ["Must be true."]})
    cfg = annotation_settings(campaign)
    enrollment, _ = Enrollment.objects.select_for_update().get_or_create(campaign=campaign, annotator=annotator)
    if enrollment.consented_at is None:
        enrollment.consented_at = timezone.now()
        enrollment.consent_text = cfg["consent_text"]
        enrollment.save(update_fields=["consented_at", "consent_text"])
    return enrollment


def enrollment_for_work(*, annotator: Annotator, campaign_id: int, lock: bool) -> Enrollment:
    """The annotator's enrollment (with its campaign) when they may work in the campaign; else the
    refusal of :func:`enrollment_check`. `lock=True` locks the row (FOR NO KEY UPDATE): one
    annotator's concurrent requests (two tabs) are serialised, so they never get two HITs at once.
    Call inside a transaction when locking."""
    qs = Enrollment.objects.select_related("campaign").filter(campaign_id=campaign_id, annotator=annotator,
                                                              campaign__deleted_at__isnull=True)
    if lock:
        qs = qs.select_for_update(of=("self",), no_key=True)
    enrollment = qs.first()
    if enrollment is None:
        enrollment_check(campaign_id=campaign_id, consented=False, status="", reason="")
        raise AssertionError("unreachable: enrollment_check raises without consent")
    enrollment_check(campaign_id=campaign_id, consented=enrollment.consented_at is not None,
                     status=enrollment.status, reason=enrollment.status_reason)
    return enrollment


def enrollment_check(*, campaign_id: int, consented: bool, status: str, reason: str) -> None:
    """Raise why an annotator may not work in the campaign (404 unknown campaign, 403 no consent or
    not active); nothing when they may."""
    if not consented:
        if not Campaign.objects.filter(pk=campaign_id, deleted_at__isnull=True,
                                       status__in=ANNOTATOR_VISIBLE).exists():
            raise NotFoundError(f"Campaign {campaign_id} not found.")
        raise ForbiddenError("Consent to the campaign first (POST /api/campaigns/{id}/consent/).",
                             errors={"consent": ["not given"]})
    if status != Enrollment.Status.ACTIVE:
        reason = f": {reason}" if reason else ""
        raise ForbiddenError(f"Your participation in this campaign is {status}{reason}",
                             errors={"enrollment": [status]})
