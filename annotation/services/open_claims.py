"""The claim of a campaign being opened by a worker (annotation/services/opening.py): one cache entry per
campaign, {"token", "progress", "beat"}, written by the request that queues the worker and by the worker's
progress (its heartbeat). Read by opening (a second request, a takeover of a lost worker's claim) and by
the lifecycle's close (a 409 while a worker genuinely opens the campaign). Its own module, so the
lifecycle reads it without importing opening (which imports the lifecycle)."""
from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache

from campaigns.models import Campaign
from common.budget import worker_max_s

DEFAULT_STALE_S = 120.0  # CAMPAIGN_OPEN_STALE_S: the longest step between two heartbeats is seconds


def _claim_key(campaign: Campaign) -> str:
    """One claim per campaign; its creation time in the key, so a recreated database (the same ids) never
    reads an old claim."""
    return f"campaign-open:{campaign.pk}:{campaign.created_at.timestamp():.6f}"


def open_stale_s() -> float:
    """Seconds without progress after which an opening worker counts as lost (CAMPAIGN_OPEN_STALE_S)."""
    return float(getattr(settings, "CAMPAIGN_OPEN_STALE_S", DEFAULT_STALE_S))


def _claim_timeout() -> int:
    return int(2 * worker_max_s()) + 60


def _claim(campaign: Campaign) -> dict[str, Any] | None:
    """The claim {"token", "progress", "beat"} while a worker opens the campaign; None when none does.
    A bare number (a claim written before the heartbeat existed) reads as a live claim."""
    value = cache.get(_claim_key(campaign))
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    return {"token": None, "progress": float(value), "beat": time.time()}


def _claim_write(campaign: Campaign, token: str, progress: float) -> None:
    cache.set(_claim_key(campaign), {"token": token, "progress": progress, "beat": time.time()},
              timeout=_claim_timeout())


def open_progress(campaign: Campaign) -> float | None:
    """The worker's progress (0-1) while a worker opens the campaign; None when none does."""
    claim = _claim(campaign)
    return None if claim is None else float(claim["progress"])


def _building(campaign: Campaign, claim: dict[str, Any]) -> dict[str, Any]:
    quiet = max(0.0, time.time() - float(claim["beat"]))
    return {"id": campaign.pk, "status": "building", "progress": round(float(claim["progress"]), 3),
            "updated_s": round(quiet, 1),
            "detail": (f"A worker is opening this campaign ({float(claim['progress']):.0%} done, last progress "
                       f"{quiet:.0f} s ago); it cannot be opened again while it runs. Without progress for "
                       f"{open_stale_s():.0f} s it counts as lost and the next open request starts it again.")}


def opening_running(campaign: Campaign) -> dict[str, Any] | None:
    """The 202 body while a worker is genuinely opening the campaign (a claim with progress within
    `open_stale_s()`); None when none is (no claim, or a lost worker's)."""
    claim = _claim(campaign)
    if claim is None or time.time() - float(claim["beat"]) > open_stale_s():
        return None
    return _building(campaign, claim)


