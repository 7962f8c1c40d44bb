"""API rate limits (DRF throttles) whose rates are settings read at request time.

`THROTTLE_RATES` (settings, from the environment) holds the rates: `annotator` applies per annotator
(every authenticated user who is not a researcher), `anon` per client IP to unauthenticated calls
(annotator sign-up). Researchers are not throttled. The counters live in the cache (Redis in
production); when the cache is unreachable the throttles let requests through rather than turning
an outage of Redis into an outage of annotation.

Each rate is a fixed-window counter taken with one atomic increment (`common.counters.window_incr`:
one Redis round trip per request, a Lua INCR + EXPIRE): DRF's stock throttles keep a history list that they read, extend and write back, so
parallel requests each read the same history and all pass (640 parallel requests went through a
600/min limit). Here request n of a window is refused for every n over the rate, however many run
at once (tests/security/test_accounts.py::test_rate_throttle_is_atomic_under_100_parallel_requests).
"""
from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from .clientaddr import client_address
from .counters import fixed_window, window_incr

logger = logging.getLogger(__name__)


class _SettingsRateMixin:
    scope: str

    def get_ident(self, request: Any) -> str:
        # The same client address as every other per-address limit (behind the TLS proxy too).
        return client_address(request)

    def get_rate(self) -> str | None:
        return getattr(settings, "THROTTLE_RATES", {}).get(self.scope)

    _wait: float | None = None

    def allow_request(self, request: Any, view: Any) -> bool:
        try:
            return self._counted(request, view)
        except Exception:  # noqa: BLE001 - the cache is down: fail open, log it
            logger.warning("throttle %s: cache unavailable, request allowed", self.scope, exc_info=True)
            return True

    def _counted(self, request: Any, view: Any) -> bool:
        rate = self.get_rate()
        if rate is None:
            return True
        allowed, window = self.parse_rate(rate)  # type: ignore[attr-defined]
        if allowed is None:
            return True
        ident = self.get_cache_key(request, view)  # type: ignore[attr-defined]
        if ident is None:
            return True
        start, left = fixed_window(window)
        key = f"{ident}:w{start}"
        count = window_incr(self.cache, key, window + 1)  # type: ignore[attr-defined]  # one atomic round trip
        if count <= allowed:
            return True
        self._wait = float(left)
        return False

    def wait(self) -> float | None:
        return self._wait


class AnnotatorRateThrottle(_SettingsRateMixin, UserRateThrottle):
    """Per annotator (user id) on the annotator endpoints. Researchers (already known as such on
    researcher endpoints), staff and anonymous callers are left to the other rules."""

    scope = "annotator"

    def allow_request(self, request: Any, view: Any) -> bool:
        user = request.user
        if not user or not user.is_authenticated or user.is_staff:
            return True
        # Researcher endpoints have already checked the role (IsResearcher caches it on the user);
        # elsewhere no extra query on the HIT hot path: the caller counts as an annotator.
        if getattr(user, "_is_researcher", False):
            return True
        return super().allow_request(request, view)


class AnonymousRateThrottle(_SettingsRateMixin, AnonRateThrottle):
    scope = "anon"
