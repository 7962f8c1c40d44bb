"""Celery tasks of the campaign design: thin, ids in, idempotent."""
from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings

from . import services


@shared_task(name="campaigns.prompts_expand", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def campaign_prompts_expand(campaign_id: int) -> dict[str, Any]:
    """Create a large campaign's prompts in chunks (see services.campaign_prompts_expand)."""
    return services.campaign_prompts_expand(campaign_id=campaign_id)


@shared_task(name="campaigns.prompts_sweep", ignore_result=True)
def campaign_prompts_sweep() -> list[int]:
    """Beat: re-publish expansions that made no progress for CAMPAIGN_EXPANSION_STALL_S."""
    return services.campaign_prompts_sweep(stale_s=settings.CAMPAIGN_EXPANSION_STALL_S)


@shared_task(name="campaigns.upload_import", queue="default", ignore_result=True)
def upload_import(job_id: str) -> None:
    """An upload imported in the worker (over REQUEST_WORK_BUDGET_S: common/upload_jobs.py)."""
    from common.upload_jobs import upload_import_run

    upload_import_run(job_id=job_id)
