"""Writes and decisions behind the crowd-platform pages: external ids -> annotators, the MTurk
assignment -> product HIT mapping, the MTurk submit target allow-list, the MTurk qualification
grant after a pass on our page, and the Prolific completion / screen-out decision.

The MTurk client is made by `mturk_client_factory` (a module attribute, read at call time): tests
replace it with a stub and nothing ever reaches Amazon.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from annotation.hits import assignment_next, assignment_payload
from annotation.models import (
    Annotator,
    Assignment,
    AssignmentItem,
    Enrollment,
    Qualification,
    QualificationAttempt,
    Question,
)
from annotation.services.external import annotator_for_platform, assignment_external_set
from annotation.services.qualification import qualification_attempt
from campaigns.models import Campaign
from common.accounts import EXTERNAL_ID_RULE, external_id_valid
from common.errors import ApplicationError, ConflictError, NotFoundError

from . import mturk

log = logging.getLogger(__name__)

# MTurk's ids (worker, assignment, HIT) and Prolific's (participant, study, session) are short
# alphanumeric strings; anything else is refused before it reaches the database or a page.
PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
# Where the page may POST the finished assignment (MTurk's `turkSubmitTo`): production and sandbox.
MTURK_SUBMIT_ORIGINS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
# Sites allowed to frame the ExternalQuestion page (worker.mturk.com shows HITs today).
MTURK_FRAME_ANCESTORS = ("https://*.mturk.com", "https://mturk.com")

mturk_client_factory: Callable[..., Any] = mturk.mturk_client


def valid_external_id(value: Any) -> bool:
    return external_id_valid(value)


# ------------------------------------------------------------------------------------ MTurk submit
def mturk_submit_origins() -> list[str]:
    extra = getattr(settings, "MTURK_SUBMIT_HOSTS_EXTRA", []) or []
    return [*MTURK_SUBMIT_ORIGINS, *(o.rstrip("/") for o in extra)]


def mturk_submit_url(turk_submit_to: Any) -> str | None:
    """`turkSubmitTo + /mturk/externalSubmit` when turkSubmitTo is one of the allowed origins
    (scheme, host and port exactly; no path, query, credentials), else None. The form's action is
    always built here on the server, so the page cannot be used to send a worker elsewhere."""
    if not isinstance(turk_submit_to, str) or len(turk_submit_to) > 200:
        return None
    try:
        parts = urlsplit(turk_submit_to.strip())
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        return None
    if parts.username or parts.password or parts.query or parts.fragment or parts.path not in ("", "/"):
        return None
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    if origin not in [o.lower() for o in mturk_submit_origins()]:
        return None
    return origin + "/mturk/externalSubmit"


# ------------------------------------------------------------------------------------ annotators
PLATFORM_FIELDS = {Annotator.Kind.MTURK: "mturk_worker_id", Annotator.Kind.PROLIFIC: "prolific_pid"}


def crowd_annotator(*, platform: str, external_id: str) -> tuple[Annotator, bool]:
    """The annotator holding this platform id, and whether it was created now. A link account of
    the platform (kind `mturk` / `prolific`: user with no usable password, no permanent API token)
    is created on first sight; safe against two first requests at once (the unique id decides).
    The caller decides who may enter it (crowd/entry.py): a password account that holds the id is
    returned as it is, never entered by the link."""
    field = PLATFORM_FIELDS[Annotator.Kind(platform)]
    if not valid_external_id(external_id):
        raise ApplicationError(f"Invalid {field}.", errors={field: [EXTERNAL_ID_RULE]})
    return annotator_for_platform(kind=platform, field=field, external_id=external_id)


# ------------------------------------------------------------------------------------ MTurk HITs
def _submitted(assignment: Assignment) -> dict[str, Any]:
    return {"id": assignment.pk, "status": assignment.status, "submitted_at": assignment.submitted_at,
            "external_assignment_id": assignment.external_assignment_id}


@transaction.atomic
def mturk_assignment_take(*, annotator: Annotator, campaign_id: int, assignment_id: Any, hit_id: Any
                          ) -> tuple[Mapping[str, Any] | None, bool]:
    """The product HIT of an MTurk assignment: one MTurk assignment = one product Assignment.

    The same assignmentId always gives the same product HIT (a reload while it is leased, or after
    it was submitted: then `status` is "submitted" and the page only has to tell MTurk). A lease
    that ran out before submission is replaced by a new HIT carrying the MTurk ids. Returns
    (payload, created); (None, False) when there is no work left for this worker.
    """
    errors = {}
    if not valid_external_id(assignment_id) or assignment_id == PREVIEW_ASSIGNMENT_ID:
        errors["assignmentId"] = ["the MTurk assignment id of an accepted HIT is required"]
    if not valid_external_id(hit_id):
        errors["hitId"] = ["the MTurk HIT id is required"]
    if errors:
        raise ApplicationError("Open this task from MTurk after accepting the HIT.", errors=errors)
    existing = Assignment.objects.select_for_update().filter(external_assignment_id=assignment_id).first()
    if existing is not None:
        if existing.annotator_id != annotator.pk or existing.campaign_id != campaign_id:
            raise NotFoundError("This MTurk assignment belongs to another worker or task.")
        if existing.status == Assignment.Status.SUBMITTED:
            return _submitted(existing), False
        if existing.status == Assignment.Status.ACTIVE and existing.expires_at > timezone.now():
            return assignment_payload(existing), False
        # Expired or returned: the MTurk assignment is still open; its ids move to a new HIT.
        assignment_external_set(assignment_id=existing.pk, external_assignment_id=None)
    payload, created = assignment_next(annotator=annotator, campaign_id=campaign_id)
    if payload is None:
        return None, False
    held = Assignment.objects.get(pk=payload["id"])
    if held.external_assignment_id and held.external_assignment_id != assignment_id:
        raise ConflictError(
            "You are already working on another HIT of this study (MTurk assignment "
            f"{held.external_assignment_id}). Finish or return that HIT first, or wait until it expires.",
            errors={"assignmentId": ["another HIT is in progress"]})
    assignment_external_set(assignment_id=held.pk, external_assignment_id=assignment_id, external_hit_id=hit_id)
    return payload, created


def mturk_qualification_attempt(*, qualification: Qualification, annotator: Annotator, answers: Any,
                                address: str = "") -> dict[str, Any]:
    """A qualification attempt on our page; a pass also grants the campaign's MTurk qualification
    type (when it was published) after the attempt is committed. A failed grant is logged and
    reported (`mturk_granted: false`), never undoing the pass recorded here."""
    result = qualification_attempt(qualification=qualification, annotator=annotator, answers=answers, address=address)
    result["mturk_granted"] = False
    if result["passed"] and annotator.mturk_worker_id and hasattr(qualification, "mturk_type"):
        try:
            result["mturk_granted"] = mturk.mturk_qualification_grant(
                qualification=qualification, annotator=annotator, client=mturk_client_factory())
        except Exception:  # network or AWS error: the worker keeps working; a researcher can grant later
            log.exception("MTurk qualification grant failed (qualification %s, worker %s)", qualification.pk,
                          annotator.mturk_worker_id)
    return result


# ------------------------------------------------------------------------------------ Prolific
def prolific_settings(campaign: Campaign) -> dict[str, Any]:
    from .spec_section import PROLIFIC_DEFAULTS

    return {**PROLIFIC_DEFAULTS, **((campaign.spec.get("crowd") or {}).get("prolific") or {})}


def prolific_code_url(campaign: Campaign, code: str | None) -> str | None:
    """The study's completion URL with `cc=<code>`: `crowd.prolific.completion_url` when set,
    else settings.PROLIFIC_COMPLETION_URL. None when the study has no such code."""
    if not code:
        return None
    base = prolific_settings(campaign).get("completion_url") or settings.PROLIFIC_COMPLETION_URL
    if "cc=" in base:  # a full URL with its code already
        return base
    return f"{base}{'&' if '?' in base else '?'}{urlencode({'cc': code})}"


def has_work(*, annotator: Annotator, campaign: Campaign) -> bool:
    """Whether a HIT request would give this annotator something (read only: nothing is leased)."""
    if Assignment.objects.filter(annotator=annotator, campaign=campaign, status=Assignment.Status.ACTIVE,
                                 expires_at__gt=timezone.now()).exists():
        return True
    unqualified = (Qualification.objects.filter(campaign=campaign)
                   .filter(~Exists(QualificationAttempt.objects.filter(qualification=OuterRef("pk"),
                                                                       annotator=annotator, passed=True)))
                   .values_list("family", flat=True))
    return (Question.objects.filter(campaign=campaign, is_gold=False, assigned__lt=F("required"),
                                    image__excluded=False)
            .exclude(family__in=list(unqualified))
            .filter(~Exists(AssignmentItem.objects.filter(question=OuterRef("pk"), annotator=annotator)))
            .exists())


def prolific_state(*, annotator: Annotator, campaign: Campaign) -> str:
    """"complete" (quota of submitted HITs reached; or consented, no test left to take and nothing
    left to do; or the campaign closed), "screen_out" (a qualification test failed with no attempts
    left) or "continue"."""
    quota = prolific_settings(campaign)["hits_per_participant"]
    submitted = Assignment.objects.filter(annotator=annotator, campaign=campaign,
                                          status=Assignment.Status.SUBMITTED).count()
    if submitted >= quota:
        return "complete"
    attempts: dict[int, list[bool]] = {}
    for qid, passed in QualificationAttempt.objects.filter(
            qualification__campaign=campaign, annotator=annotator).values_list("qualification_id", "passed"):
        attempts.setdefault(qid, []).append(passed)
    takeable = False  # a test not passed yet with attempts left: passing it may open more work
    for q in Qualification.objects.filter(campaign=campaign):
        mine = attempts.get(q.pk, [])
        if not any(mine) and len(mine) >= q.max_attempts:
            return "screen_out"
        takeable = takeable or not any(mine)
    consented = Enrollment.objects.filter(annotator=annotator, campaign=campaign,
                                          consented_at__isnull=False).exists()
    # The completion code pays: it goes only to a participant who submitted work. A campaign that
    # closed, or has nothing left for them, before they did any ends without a code ("no_work": they
    # return the study on Prolific), so a made-up PROLIFIC_PID earns nothing.
    ended = campaign.status == Campaign.Status.CLOSED or (
        not takeable and campaign.status == Campaign.Status.OPEN and not has_work(annotator=annotator, campaign=campaign))
    if consented and ended:
        return "complete" if submitted > 0 else "no_work"
    return "continue"
