"""Short-lived API tokens scoped to one campaign's annotation, for pages written into a crowd
platform's frame (the MTurk ExternalQuestion page) instead of the account's permanent API key.

A scoped token is `s1.` + a `django.core.signing` value holding the user id and the campaign id,
signed with SECRET_KEY (salt below) and timestamped: it expires after `CROWD_TOKEN_TTL_S` seconds
(default 4 h). Nothing is stored; rotating SECRET_KEY revokes every one. `annotation.authentication.
TokenAuthentication` accepts it only on the annotation endpoints of its campaign
(`SCOPED_ENDPOINTS`: task, consent, qualifications, demographics, next HIT, the MTurk assignment, and the HIT
heartbeat / submit / return / qualification attempt when that HIT or test belongs to the campaign);
anywhere else it is a 403.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import signing
from rest_framework import exceptions

from common import fastpath

from . import prepared

# `Assignment.objects.filter(pk=..., campaign_id=...).exists()` as a prepared statement (annotation.prepared)
_HIT_OF_CAMPAIGN = "SELECT 1 FROM annotation_assignment WHERE id = %(id)s AND campaign_id = %(campaign)s"

PREFIX = "s1."
SALT = "annotation.scoped-token.v1"

# url names (app namespace + name) a scoped token may call, by the URL argument that ties them to a campaign
SCOPED_ENDPOINTS: dict[str, str] = {
    "annotation:campaign-task": "campaign_id",
    "annotation:campaign-consent": "campaign_id",
    "annotation:campaign-qualifications": "campaign_id",
    "annotation:campaign-demographics": "campaign_id",  # the task page's optional "About you" form
    "annotation:assignment-next": "campaign_id",
    "crowd:mturk-assignment": "campaign_id",
    "annotation:assignment-heartbeat": "assignment_id",
    "annotation:assignment-submit": "assignment_id",
    "annotation:assignment-return": "assignment_id",
    "annotation:qualification-attempts": "qualification_id",
    "crowd:mturk-qualification-attempts": "qualification_id",
}
# The caller's own data, tied to no campaign: withdrawing demographics from the task page (erases
# only the caller's demographics; a crowd-link account has no other way in).
OWN_DATA_ENDPOINTS = {"annotation:annotator-demographics", "annotation:annotator-demographics-withdraw"}


@dataclass(frozen=True)
class ScopedToken:
    """What request.auth is for a scoped token (DRF's Token for a permanent one)."""

    key: str
    user_id: int
    campaign_id: int


def ttl_s() -> int:
    return int(getattr(settings, "CROWD_TOKEN_TTL_S", 4 * 3600))


def is_scoped(key: str) -> bool:
    return key.startswith(PREFIX)


def scoped_token_issue(*, user_id: int, campaign_id: int) -> str:
    return PREFIX + signing.dumps({"u": user_id, "c": campaign_id}, salt=SALT)


def scoped_token_read(key: str) -> ScopedToken:
    """The token's user and campaign; AuthenticationFailed when forged, altered or expired."""
    try:
        value = signing.loads(key[len(PREFIX):], salt=SALT, max_age=ttl_s())
    except signing.SignatureExpired as exc:
        raise exceptions.AuthenticationFailed("This task token has expired: reload the task page.") from exc
    except signing.BadSignature as exc:
        raise exceptions.AuthenticationFailed("Invalid token.") from exc
    if not isinstance(value, dict) or not isinstance(value.get("u"), int) or not isinstance(value.get("c"), int):
        raise exceptions.AuthenticationFailed("Invalid token.")
    return ScopedToken(key=key, user_id=value["u"], campaign_id=value["c"])


def scoped_token_allows(token: ScopedToken, request: Any) -> None:
    """Raise PermissionDenied unless the request is an annotation endpoint of the token's campaign.
    One query for the endpoints addressed by HIT or test id (never on permanent tokens)."""
    from .models import Assignment, Qualification  # noqa: PLC0415 - models load after the app registry

    django_request = getattr(request, "_request", request)
    match = getattr(django_request, "resolver_match", None)
    refused = exceptions.PermissionDenied(
        f"This token only works for annotating campaign {token.campaign_id} from its task page.")
    if match is None:
        raise refused
    name = ":".join([*match.app_names[-1:], match.url_name or ""])
    if name in OWN_DATA_ENDPOINTS:
        return
    argument = SCOPED_ENDPOINTS.get(name)
    value = match.kwargs.get(argument) if argument else None
    if value is None:
        raise refused
    if argument == "campaign_id":
        ok = int(value) == token.campaign_id
    elif argument == "assignment_id" and fastpath.enabled("token_auth"):  # every heartbeat and submit of a work page
        ok = bool(prepared.run(_HIT_OF_CAMPAIGN, {"id": int(value), "campaign": token.campaign_id}))
    elif argument == "assignment_id":
        ok = Assignment.objects.filter(pk=value, campaign_id=token.campaign_id).exists()
    else:
        ok = Qualification.objects.filter(pk=value, campaign_id=token.campaign_id).exists()
    if not ok:
        raise refused
