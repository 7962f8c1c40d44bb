"""Opening a campaign from a request, through the request work budget (`common.budget`).

`questions_open` creates one question per person (PST) or attribute (GEP) of every generated image: its
work grows with the images (a 100k-image campaign is hundreds of thousands of rows). The request
(`POST /api/campaigns/{id}/open/`, the console's "open" action) first estimates its seconds from the
images that have no questions yet (`open_estimate`, per-unit cost measured by
`bench/budget_calibrate.py`); within `REQUEST_WORK_BUDGET_S` it opens in the request, above it a worker
(`annotation.questions_open`, default queue) opens it and the request answers
`202 {"id", "status": "building", "progress"}`. A claim in the cache (one per campaign, expiring after
twice `REQUEST_WORKER_MAX_S`) keeps a second request from queueing a second worker: it reads the
progress the worker writes there. The campaign's status becomes `open` when the worker is done; opening
stays idempotent, so a later request (or the worker's retry) only adds what is missing.
"""
from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, OuterRef

from campaigns.models import Campaign
from common.budget import Estimate, budget_decide, worker_max_s
from common.errors import ConflictError
from common.tasks import task_send
from generation.models import Image

from ..models import Question
from .lifecycle import attribute_phrases, questions_open

# Seconds per question created (building the rows, the gates, bulk_create in batches of 2,000 on
# PostgreSQL), rounded up from `bench/budget_calibrate.py` (bench/README.md §12).
OPEN_PER_QUESTION_S = 2.0e-4
OPEN_FIXED_S = 0.05
TASK = "annotation.questions_open"


def _claim_key(campaign: Campaign) -> str:
    """One claim per campaign; its creation time in the key, so a recreated database (the same ids) never
    reads an old claim."""
    return f"campaign-open:{campaign.pk}:{campaign.created_at.timestamp():.6f}"


def open_estimate(campaign: Campaign) -> Estimate:
    """The seconds of opening: the images without questions times the most questions an image gets
    (PST: 2 persons of a paired image; GEP: every attribute of a neutral image). No options."""
    pending = (Image.objects.filter(campaign=campaign, status=Image.Status.DONE, excluded=False)
               .filter(~Exists(Question.objects.filter(image=OuterRef("pk")))).count())
    per_image = 2 if campaign.kind == Campaign.Kind.PST else max(1, len(attribute_phrases(campaign)))
    return Estimate(data=OPEN_FIXED_S + pending * per_image * OPEN_PER_QUESTION_S)


def open_progress(campaign: Campaign) -> float | None:
    """The worker's progress (0-1) while a worker opens the campaign; None when none does."""
    value = cache.get(_claim_key(campaign))
    return None if value is None else float(value)


def _building(campaign: Campaign, progress: float) -> dict[str, Any]:
    return {"id": campaign.pk, "status": "building", "progress": round(progress, 3)}


def campaign_open_request(*, campaign: Campaign) -> tuple[str, dict[str, Any]]:
    """("ready", {"id", "status", "questions_created", "questions"}) when opened in the request, or
    ("building", {"id", "status": "building", "progress"}) while a worker opens it (the API's 202)."""
    if campaign.status == Campaign.Status.CLOSED:  # refused before any estimate, as questions_open does
        raise ConflictError("The campaign is closed; it cannot be opened again.")
    running = open_progress(campaign)
    if running is not None:
        return "building", _building(campaign, running)
    if budget_decide(open_estimate(campaign)) == "inline":
        result = questions_open(campaign=campaign)
        return "ready", {"id": campaign.pk, "status": campaign.status, **result}
    if not cache.add(_claim_key(campaign), 0.0, timeout=int(2 * worker_max_s()) + 60):
        return "building", _building(campaign, open_progress(campaign) or 0.0)  # another request, a moment ago
    campaign_id = campaign.pk
    transaction.on_commit(lambda: task_send(TASK, args=[campaign_id]))
    return "building", _building(campaign, 0.0)


def campaign_open_run(*, campaign_id: int) -> dict[str, int] | None:
    """Worker side: open the campaign (idempotent), writing the progress where requests read it; the
    claim is released when done or failed (a request after a failure decides again)."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:  # deleted since: nothing to open (its claim expires)
        return None
    key = _claim_key(campaign)

    def progress(fraction: float) -> None:
        cache.set(key, min(0.99, max(0.0, fraction)), timeout=int(2 * worker_max_s()) + 60)

    try:
        return questions_open(campaign=campaign, progress=progress)
    finally:
        cache.delete(key)
