"""One throttle policy for every login surface and every way an account is created.

Logins (`LOGIN_THROTTLE_PATHS`: the console's `/accounts/login/`, `/admin/login/`,
`POST /api/auth/token/`, the annotators' `/work/<id>/login/`; the crowd pages' "log in to the linked
account" form calls `login_wait` itself, and a `password` in `PATCH /api/annotators/me/` goes
through `password_attempt`):
- per username (compared as `common.accounts.username_key`, whatever the address): the first
  `LOGIN_THROTTLE_FAILURES` failures cost nothing; each further one makes the next attempt wait
  `LOGIN_THROTTLE_BASE_DELAY_S` x 2^(k) seconds, at most `LOGIN_THROTTLE_MAX_DELAY_S`. Attempts
  during the wait are refused (429 with Retry-After) and do not count. It is a delay, never a
  lockout: once the wait is over the right password works (and clears the count), and failures are
  forgotten `LOGIN_THROTTLE_WINDOW_S` after the last one.
- per client address (`common.clientaddr.client_address`, the proxy header when configured): at
  most `LOGIN_THROTTLE_ADDRESS_FAILURES` failed logins per `LOGIN_THROTTLE_WINDOW_S`, whatever the
  usernames (guessing many accounts from one place).
Sign-ups (`SIGNUP_THROTTLE_PATHS`: `POST /api/annotators/`, the form `/work/<id>/signup/`; and the
crowd links, which create an account for a new external id through `signup_allow`): at most
`SIGNUP_THROTTLE_PER_ADDRESS` per address per `SIGNUP_THROTTLE_WINDOW_S`.

Failures are counted through Django's `user_login_failed` signal (sent by `authenticate()` for every
caller); successes clear the username's count through `user_logged_in` (session logins) and the
token endpoint (`login_succeeded`). Counters live in the Django cache (Redis); when the cache is
down the throttle lets requests through (logged) rather than turning a Redis outage into a login
outage.
"""
from __future__ import annotations

import hashlib
import logging
import math
import re
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse

from .accounts import username_key
from .clientaddr import client_address
from .counters import fixed_window, window_incr
from .inputs import BodyError, json_loads

logger = logging.getLogger(__name__)


def _setting(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _user_keys(username: str) -> tuple[str, str]:
    digest = _digest(username_key(username))
    return f"throttle:login:user:{digest}", f"throttle:login:wait:{digest}"


def _bucket(kind: str, address: str, window: int) -> tuple[str, int]:
    """A fixed-window counter key for this address, and the seconds left in the window."""
    start, left = fixed_window(window)
    return f"throttle:{kind}:addr:{_digest(address)}:{start}", left


def _incr(key: str, timeout: int) -> int:
    return window_incr(cache, key, timeout)  # one atomic round trip on Redis (common/counters.py)


class Throttled(Exception):
    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.message = message
        self.retry_after = max(1, int(retry_after))


# --------------------------------------------------------------------------------------- logins
def login_wait(*, username: str | None, address: str) -> Throttled | None:
    """Why a login attempt must wait now (username back-off, then the address limit), or None."""
    try:
        if username:
            until = cache.get(_user_keys(username)[1])
            if until is not None and float(until) > time.time():
                wait = math.ceil(float(until) - time.time())
                return Throttled(f"Too many failed logins for this account; try again in {wait} seconds.", wait)
        window = _setting("LOGIN_THROTTLE_WINDOW_S", 900)
        key, left = _bucket("login", address, window)
        if int(cache.get(key) or 0) >= _setting("LOGIN_THROTTLE_ADDRESS_FAILURES", 50):
            return Throttled(f"Too many failed logins from your address; try again in {left} seconds.", left)
    except Exception:  # noqa: BLE001
        logger.warning("throttle: cache unavailable, login allowed", exc_info=True)
    return None


def backoff_delay(failures: int) -> int:
    """Seconds the next attempt waits after `failures` failures in a row (0 while still free)."""
    free = _setting("LOGIN_THROTTLE_FAILURES", 5)
    if failures < free:
        return 0
    base, cap = _setting("LOGIN_THROTTLE_BASE_DELAY_S", 15), _setting("LOGIN_THROTTLE_MAX_DELAY_S", 900)
    return int(min(cap, base * 2 ** min(failures - free, 32)))


def login_failed(*, username: str, address: str) -> None:
    window = _setting("LOGIN_THROTTLE_WINDOW_S", 900)
    count_key, wait_key = _user_keys(username)
    try:
        failures = _incr(count_key, window + _setting("LOGIN_THROTTLE_MAX_DELAY_S", 900))
        cache.touch(count_key, window + _setting("LOGIN_THROTTLE_MAX_DELAY_S", 900))
        delay = backoff_delay(failures)
        if delay:
            cache.set(wait_key, time.time() + delay, timeout=delay + 1)
        _incr(_bucket("login", address, window)[0], window + 1)
    except Exception:  # noqa: BLE001
        logger.warning("throttle: cache unavailable, login failure not counted", exc_info=True)


def login_succeeded(*, username: str) -> None:
    try:
        cache.delete_many(list(_user_keys(username)))
    except Exception:  # noqa: BLE001
        logger.warning("throttle: cache unavailable", exc_info=True)


def password_attempt(request: HttpRequest, *, user: Any, password: Any) -> bool:
    """A password given to an endpoint other than a login form (PATCH /api/annotators/me/) under the
    login policy: 429 (DRF's Throttled) while the account's name or the address must wait; a wrong
    password counted as a failed login, a right one clearing the count. Returns whether it is right."""
    from rest_framework.exceptions import Throttled as DrfThrottled  # noqa: PLC0415

    username = user.get_username()
    address = client_address(request)
    refusal = login_wait(username=username, address=address)
    if refusal is not None:
        raise DrfThrottled(wait=refusal.retry_after, detail=refusal.message)
    ok = isinstance(password, str) and bool(password) and user.check_password(password)
    if ok:
        login_succeeded(username=username)
    else:
        login_failed(username=username, address=address)
    return ok


# --------------------------------------------------------------------------------------- sign-ups
def signup_allow(*, address: str) -> Throttled | None:
    """Count one account creation (or attempt) from this address; the refusal when over the limit."""
    window = _setting("SIGNUP_THROTTLE_WINDOW_S", 3600)
    key, left = _bucket("signup", address, window)
    try:
        if _incr(key, window + 1) > _setting("SIGNUP_THROTTLE_PER_ADDRESS", 20):
            return Throttled(f"Too many new accounts from your address; try again in {left} seconds.", left)
    except Exception:  # noqa: BLE001
        logger.warning("throttle: cache unavailable, sign-up allowed", exc_info=True)
    return None


# --------------------------------------------------------------------------------------- HTTP
def throttled_response(request: HttpRequest, refusal: Throttled) -> HttpResponse:
    """429 with Retry-After: JSON under /api/, a plain page elsewhere."""
    if request.path_info.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": refusal.message, "errors": {}}, status=429)
    else:
        response = HttpResponse(refusal.message, status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(refusal.retry_after)
    return response


def _on_login_failed(sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any) -> None:
    username = credentials.get("username")
    if request is not None and isinstance(username, str) and username:
        login_failed(username=username, address=client_address(request))


def _on_logged_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    login_succeeded(username=user.get_username())


def login_username(request: HttpRequest) -> str | None:
    """The username a login POST names, read the way the views will read it: the media type
    normalised once (Django's `request.content_type`: parameters dropped, lower case, so
    `Application/JSON; Charset=UTF-8` is JSON as it is for DRF's parsers), JSON through the input
    rules, every other type as a form. Every login path's throttle reads the name through here."""
    content_type = request.content_type or ""
    if content_type == "application/json" or content_type.endswith("+json"):
        try:
            data = json_loads(request.body or b"{}")  # the input rules: bounded depth, clean text
        except BodyError:
            return None  # the view answers the 400
        value = data.get("username") if isinstance(data, dict) else None
    else:
        value = request.POST.get("username")
    return value if isinstance(value, str) and value else None


class ThrottleMiddleware:
    """Refuses a login or sign-up POST on the listed paths when the policy says wait."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.login_paths = [re.compile(p) for p in settings.LOGIN_THROTTLE_PATHS]
        self.signup_paths = [re.compile(p) for p in settings.SIGNUP_THROTTLE_PATHS]
        user_login_failed.connect(_on_login_failed, dispatch_uid="common.throttle.failed")
        user_logged_in.connect(_on_logged_in, dispatch_uid="common.throttle.logged_in")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST":
            path = request.path_info
            refusal = None
            if any(p.match(path) for p in self.login_paths):
                refusal = login_wait(username=login_username(request), address=client_address(request))
            elif any(p.match(path) for p in self.signup_paths):
                refusal = signup_allow(address=client_address(request))
            if refusal is not None:
                return throttled_response(request, refusal)
        return self.get_response(request)
