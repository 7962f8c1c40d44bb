"""Celery tasks: thin, ids in, idempotent (see services.images_claim)."""
from __future__ import annotations

import random
import uuid
from typing import Any

from celery import shared_task
from django.conf import settings

from . import services
from .backends import TransientError
from .services import campaign_generation_refresh, images_fail, images_generate_batch

# Routed to the `generation` queue by CELERY_TASK_ROUTES (and enqueued with queue= explicitly); the
# task-level `queue` attribute is deprecated in Celery 5.7.


@shared_task(bind=True, name="generation.images_generate", acks_late=True,
             reject_on_worker_lost=True, max_retries=None, ignore_result=True)
def images_generate(self: Any, image_ids: list[int]) -> dict[str, Any]:
    """Generate a batch of images. Redelivered (worker killed) or retried messages keep their
    task id, which lets them take back the images they had claimed; nothing else is redone."""
    task_id = self.request.id or f"local-{uuid.uuid4()}"
    try:
        return images_generate_batch(image_ids=image_ids, task_id=task_id)
    except TransientError as exc:
        retries = self.request.retries or 0
        if retries >= settings.GENERATION_MAX_RETRIES:
            failed = images_fail(image_ids=image_ids, task_id=task_id,
                                 error=f"gave up after {retries + 1} attempts: {exc}")
            from .models import Image

            campaign_id = Image.objects.filter(id__in=image_ids).values_list("campaign_id", flat=True).first()
            if campaign_id:
                campaign_generation_refresh(campaign_id=campaign_id)
            return {"failed": failed}
        if exc.retry_after is not None:
            countdown = exc.retry_after
        else:
            countdown = min(settings.GENERATION_RETRY_BACKOFF_MAX_S, 5 * 2 ** retries) * random.uniform(0.8, 1.2)
        raise self.retry(exc=exc, countdown=countdown) from exc


@shared_task(name="generation.plan", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def generation_plan(campaign_id: int) -> dict[str, Any]:
    """Create and queue a large campaign's images (see services.generation_plan); idempotent."""
    return services.generation_plan(campaign_id=campaign_id)


@shared_task(name="generation.sweep", ignore_result=True)
def generation_sweep() -> dict[str, Any]:
    """Beat: queue lost generation work again (see services.generation_sweep)."""
    return services.generation_sweep()
