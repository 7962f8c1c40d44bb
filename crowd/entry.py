"""Who a crowd link may log in: one gate for the MTurk ExternalQuestion page and the Prolific link.

- An external id (`workerId=`, `PROLIFIC_PID=`) only ever enters an account created by that
  platform's link (`Annotator.kind` `mturk` / `prolific`: no usable password, no permanent API key).
  New ids get such an account, at most `SIGNUP_THROTTLE_PER_ADDRESS` per address (common/throttle.py).
- An id a password account claims (sign-up or profile, with the password) is never entered by the
  link, and never keeps the platform's worker out: the link enters the platform's own link account
  (created on first sight), unless the claimant's owner is the one logged in. The POST form
  `action=login` (throttled like every login) lets that owner log in from the link.
- A GET link never replaces the session of another logged-in user (login CSRF): the page says who is
  logged in and offers "log out and continue" as a POST form (with the CSRF token).
The page itself then works with a token scoped to the campaign and short-lived
(annotation/scoped_tokens.py), never the account's permanent key.
"""
from __future__ import annotations

from django.contrib.auth import authenticate, login, logout
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render

from annotation.models import Annotator
from campaigns.models import Campaign
from common.clientaddr import client_address
from common.throttle import login_wait, signup_allow

from . import services

BACKEND = "django.contrib.auth.backends.ModelBackend"
PLATFORM_NAMES = {Annotator.Kind.MTURK: "Amazon Mechanical Turk", Annotator.Kind.PROLIFIC: "Prolific"}


def _page(request: HttpRequest, template: str, status: int, **context: object) -> HttpResponse:
    return render(request, template, {"action_url": request.get_full_path(), **context}, status=status)


def _holder(platform: str, external_id: str) -> Annotator | None:
    """The platform's link account of this id (never a password account claiming it)."""
    field = services.PLATFORM_FIELDS[Annotator.Kind(platform)]
    return Annotator.objects.filter(kind=platform, **{field: external_id}).select_related("user").first()


def _claimant(platform: str, external_id: str) -> Annotator | None:
    """The password account that linked this id (with its password), if any."""
    field = services.PLATFORM_FIELDS[Annotator.Kind(platform)]
    return Annotator.objects.filter(kind=Annotator.Kind.PASSWORD, **{field: external_id}).first()


def crowd_enter(request: HttpRequest, *, platform: str, external_id: str, campaign: Campaign
                ) -> Annotator | HttpResponse:
    """The annotator this link may work as (logged in with a session), or the page to show instead.
    A password account that linked the id works as itself when its owner is logged in; nobody else
    ever enters it, and its claim never keeps the platform's worker out of their link account."""
    user = request.user
    if user.is_authenticated:
        claimant = _claimant(platform, external_id)
        if claimant is not None and claimant.user_id == user.pk:
            return claimant  # its owner, logged in with the password
    holder = _holder(platform, external_id)
    name = PLATFORM_NAMES[Annotator.Kind(platform)]
    if user.is_authenticated and (holder is None or user.pk != holder.user_id):
        # never replaced by a GET: nothing is created or changed until the POST says so
        return _page(request, "crowd/link_switch.html", 409, campaign=campaign, current=user.get_username(),
                     platform_name=name)
    if holder is None:
        refusal = signup_allow(address=client_address(request))
        if refusal is not None:
            response = _page(request, "crowd/link_throttled.html", 429, campaign=campaign, message=refusal.message)
            response["Retry-After"] = str(refusal.retry_after)
            return response
        holder, _created = services.crowd_annotator(platform=platform, external_id=external_id)
    if not user.is_authenticated:
        login(request, holder.user, backend=BACKEND)
    return holder


def crowd_enter_post(request: HttpRequest, *, platform: str, external_id: str, campaign: Campaign) -> HttpResponse:
    """The forms of the pages above (CSRF-checked POSTs to the link's own URL): `action=switch` logs
    the other user out and enters the link account; `action=login` with `username` / `password`
    enters the password account that holds the id. Then back to the link (GET)."""
    holder = _holder(platform, external_id)
    claimant = _claimant(platform, external_id)
    again = HttpResponseRedirect(request.get_full_path())
    action = request.POST.get("action")
    if action == "switch":
        if holder is not None:
            logout(request)
            login(request, holder.user, backend=BACKEND)
        else:
            logout(request)
        return again
    if action == "login" and claimant is not None:
        username, password = request.POST.get("username", ""), request.POST.get("password", "")
        refusal = login_wait(username=username, address=client_address(request))
        if refusal is not None:
            response = _page(request, "crowd/link_throttled.html", 429, campaign=campaign, message=refusal.message)
            response["Retry-After"] = str(refusal.retry_after)
            return response
        user = authenticate(request, username=username, password=password)  # failures counted (throttle)
        if user is None or user.pk != claimant.user_id:
            return _page(request, "crowd/link_login.html", 403, campaign=campaign,
                         platform_name=PLATFORM_NAMES[Annotator.Kind(platform)],
                         error="That is not the username and password of the account this id is linked to.")
        if request.user.is_authenticated and request.user.pk != user.pk:
            logout(request)
        login(request, user, backend=BACKEND)
        return again
    return _page(request, "crowd/bad_request.html", 400, campaign=campaign, title="Unknown action",
                 problems=["This form does not exist."], platform=platform)
