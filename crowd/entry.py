"""Who a crowd link may log in: one gate for the MTurk ExternalQuestion page and the Prolific link.

- An external id (`workerId=`, `PROLIFIC_PID=`) only ever enters an account created by that
  platform's link (`Annotator.kind` `mturk` / `prolific`: no usable password, no permanent API key).
  New ids get such an account, at most `SIGNUP_THROTTLE_PER_ADDRESS` per address (common/throttle.py).
- An id held by a password account (its owner linked it, with the password) is never entered by
  the link: the page asks for that account's password (a POST, throttled like every login) and
  goes on only for the session that gave it.
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
    field = services.PLATFORM_FIELDS[Annotator.Kind(platform)]
    return Annotator.objects.filter(**{field: external_id}).select_related("user").first()


def crowd_enter(request: HttpRequest, *, platform: str, external_id: str, campaign: Campaign
                ) -> Annotator | HttpResponse:
    """The annotator this link may work as (logged in with a session), or the page to show instead."""
    holder = _holder(platform, external_id)
    user = request.user
    name = PLATFORM_NAMES[Annotator.Kind(platform)]
    if holder is not None and holder.kind != platform:
        if user.is_authenticated and user.pk == holder.user_id:
            return holder  # its owner, logged in with the password
        return _page(request, "crowd/link_login.html", 403, campaign=campaign, platform_name=name, error="")
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
        if holder.kind != platform:  # a password account took the id a moment ago
            return _page(request, "crowd/link_login.html", 403, campaign=campaign, platform_name=name, error="")
    if not user.is_authenticated:
        login(request, holder.user, backend=BACKEND)
    return holder


def crowd_enter_post(request: HttpRequest, *, platform: str, external_id: str, campaign: Campaign) -> HttpResponse:
    """The forms of the pages above (CSRF-checked POSTs to the link's own URL): `action=switch` logs
    the other user out and enters the link account; `action=login` with `username` / `password`
    enters the password account that holds the id. Then back to the link (GET)."""
    holder = _holder(platform, external_id)
    again = HttpResponseRedirect(request.get_full_path())
    action = request.POST.get("action")
    if action == "switch":
        if holder is not None and holder.kind == platform:
            logout(request)
            login(request, holder.user, backend=BACKEND)
        else:
            logout(request)
        return again
    if action == "login" and holder is not None and holder.kind != platform:
        username, password = request.POST.get("username", ""), request.POST.get("password", "")
        refusal = login_wait(username=username, address=client_address(request))
        if refusal is not None:
            response = _page(request, "crowd/link_throttled.html", 429, campaign=campaign, message=refusal.message)
            response["Retry-After"] = str(refusal.retry_after)
            return response
        user = authenticate(request, username=username, password=password)  # failures counted (throttle)
        if user is None or user.pk != holder.user_id:
            return _page(request, "crowd/link_login.html", 403, campaign=campaign,
                         platform_name=PLATFORM_NAMES[Annotator.Kind(platform)],
                         error="That is not the username and password of the account this id is linked to.")
        if request.user.is_authenticated and request.user.pk != user.pk:
            logout(request)
        login(request, user, backend=BACKEND)
        return again
    return _page(request, "crowd/bad_request.html", 400, campaign=campaign, title="Unknown action",
                 problems=["This form does not exist."], platform=platform)
