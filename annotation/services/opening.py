"""Opening a campaign from a request, through the request work budget (`common.budget`).

`questions_open` creates one question per person (PST) or attribute (GEP) of every generated image: its
work grows with the images (a 100k-image campaign is hundreds of thousands of rows). The request
(`POST /api/campaigns/{id}/open/`, the console's "open" action) first estimates its seconds from the
images that have no questions yet (`open_estimate`, per-unit cost measured by
`bench/budget_calibrate.py`); within `REQUEST_WORK_BUDGET_S` it opens in the request, above it a worker
(`annotation.questions_open`, default queue) opens it and the request answers
`202 {"id", "status": "building", "progress", "updated_s", "detail"}`. A claim in the cache (one per
campaign, expiring after twice `REQUEST_WORKER_MAX_S`) keeps a second request from queueing a second
worker: it reads the progress the worker writes there. The campaign's status becomes `open` when the
worker is done; opening stays idempotent, so a later request (or the worker's retry) only adds what is
missing.

A lost worker (killed, its message lost) must not block the campaign until its claim expires. The claim
carries a token (sent to the worker with the campaign id) and a heartbeat: the time of the worker's last
progress, written when the request queues it, when the worker starts and at every step of
`questions_open` (at least every 2,000 images and every bulk insert). While the heartbeat is younger
than `CAMPAIGN_OPEN_STALE_S` (setting, default 120 s) the worker counts as running and a request
answers the 202 with its progress; when it is older, the next request takes the claim over with a new
token and queues a new worker. A worker whose token is no longer the claim's (the lost one redelivered
late) stops before creating anything, and never writes or releases the new claim. Celery keeps no
results here (`CELERY_TASK_IGNORE_RESULT`), so the heartbeat is the only sign of life.
"""
from __future__ import annotations

import time
import uuid
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, OuterRef

from campaigns.models import Campaign
from common.budget import Estimate, budget_decide
from common.errors import ConflictError
from common.tasks import task_send
from generation.models import Image

from ..models import Question
from .lifecycle import attribute_phrases, questions_open
from .open_claims import (  # noqa: F401  (open_progress, open_stale_s, opening_running: this module's API too)
    _building,
    _claim,
    _claim_key,
    _claim_timeout,
    _claim_write,
    open_progress,
    open_stale_s,
    opening_running,
)

# Seconds per question created (building the rows, the gates, bulk_create in batches of 2,000 on
# PostgreSQL), rounded up from `bench/budget_calibrate.py`, 2026-11-27 17:25 and 17:29 UTC, load average
# 9-15 (bench/README.md section 12): the GEP paper's design, 4,800 questions in 1.45-1.65 s CPU (this
# process and its PostgreSQL backend: 302-345 us per question; 5.7-5.9 s wall loaded).
OPEN_PER_QUESTION_S = 5.0e-4
OPEN_FIXED_S = 0.05
TASK = "annotation.questions_open"


def open_estimate(campaign: Campaign) -> Estimate:
    """The seconds of opening: the images without questions times the most questions an image gets
    (PST: 2 persons of a paired image; GEP: every attribute of a neutral image). No options."""
    pending = (Image.objects.filter(campaign=campaign, status=Image.Status.DONE, excluded=False)
               .filter(~Exists(Question.objects.filter(image=OuterRef("pk")))).count())
    per_image = 2 if campaign.kind == Campaign.Kind.PST else max(1, len(attribute_phrases(campaign)))
    return Estimate(data=OPEN_FIXED_S + pending * per_image * OPEN_PER_QUESTION_S)


def _take_over(campaign: Campaign, claim: dict[str, Any]) -> str | None:
    """A new token for a claim whose worker wrote no progress for `open_stale_s()`; None while it is
    alive or when another request took it over a moment ago (one takeover per lost token)."""
    if time.time() - float(claim["beat"]) <= open_stale_s():
        return None
    if not cache.add(f"{_claim_key(campaign)}:takeover:{claim['token']}", 1, timeout=_claim_timeout()):
        return None
    token = uuid.uuid4().hex
    _claim_write(campaign, token, 0.0)
    return token


def _queue(campaign: Campaign, token: str) -> None:
    campaign_id = campaign.pk
    transaction.on_commit(lambda: task_send(TASK, args=[campaign_id, token]))


def campaign_open_request(*, campaign: Campaign) -> tuple[str, dict[str, Any]]:
    """("ready", {"id", "status", "questions_created", "questions"}) when opened in the request, or
    ("building", {"id", "status": "building", "progress", "updated_s", "detail"}) while a worker opens it
    (the API's 202). A worker silent for longer than `open_stale_s()` is replaced by a new one."""
    if campaign.status == Campaign.Status.CLOSED:  # refused before any estimate, as questions_open does
        raise ConflictError("The campaign is closed; it cannot be opened again.")
    claim = _claim(campaign)
    if claim is not None:
        token = _take_over(campaign, claim)
        if token is None:  # genuinely running (or just taken over by another request)
            return "building", _building(campaign, _claim(campaign) or claim)
        _queue(campaign, token)
        return "building", _building(campaign, _claim(campaign) or claim)
    if budget_decide(open_estimate(campaign)) == "inline":
        result = questions_open(campaign=campaign)
        return "ready", {"id": campaign.pk, "status": campaign.status, **result}
    token = uuid.uuid4().hex
    if not cache.add(_claim_key(campaign), {"token": token, "progress": 0.0, "beat": time.time()},
                     timeout=_claim_timeout()):
        claim = _claim(campaign)  # another request, a moment ago
        return "building", _building(campaign, claim or {"progress": 0.0, "beat": time.time()})
    _queue(campaign, token)
    return "building", _building(campaign, {"progress": 0.0, "beat": time.time()})


def campaign_open_run(*, campaign_id: int, token: str | None = None) -> dict[str, int] | None:
    """Worker side: open the campaign (idempotent), writing the progress and heartbeat where requests read
    them; the claim is released when done or failed (a request after a failure decides again). A worker
    whose token is not the claim's (superseded after it was taken as lost) does nothing. `token` None:
    a message queued before tokens existed, run as before."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:  # deleted since: nothing to open (its claim expires)
        return None
    claim = _claim(campaign)
    if token is not None and (claim is None or claim["token"] != token):
        return None  # superseded: another worker owns the opening now (or it is done)
    own = token or uuid.uuid4().hex

    def progress(fraction: float) -> None:
        current = _claim(campaign)
        if current is not None and current["token"] not in (own, None):
            return  # taken over while this one was silent: never overwrite the new worker's claim
        _claim_write(campaign, own, min(0.99, max(0.0, fraction)))

    progress(0.0)  # started: the heartbeat before the first query
    try:
        return questions_open(campaign=campaign, progress=progress)
    finally:
        current = _claim(campaign)
        if current is not None and current["token"] == own:
            cache.delete(_claim_key(campaign))
