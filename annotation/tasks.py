"""Celery tasks of annotation: thin, ids in, idempotent (they re-check state under row locks)."""
from __future__ import annotations

from celery import shared_task
from django.db import transaction

from campaigns.models import Campaign


@shared_task(name="annotation.leases_reclaim", queue="default", ignore_result=True)
def leases_reclaim_task(campaign_id: int | None = None) -> int:
    """Second path (besides every HIT request) that puts expired leases back in the pool."""
    from .services.leases import leases_reclaim

    with transaction.atomic():
        return leases_reclaim(campaign_id=campaign_id)


@shared_task(name="annotation.assignments_auto_approve", queue="default", ignore_result=True)
def assignments_auto_approve_task() -> int:
    """Approve submitted HITs left pending longer than each campaign's `auto_approve_hours`."""
    from .services.review import assignments_auto_approve

    total = 0
    for campaign in Campaign.objects.filter(assignments__review="pending").distinct():
        with transaction.atomic():
            total += assignments_auto_approve(campaign=campaign)
    return total


@shared_task(name="annotation.questions_open", queue="default", ignore_result=True)
def questions_open_task(campaign_id: int, token: str | None = None) -> None:
    """Open a campaign too large to open in a request (over REQUEST_WORK_BUDGET_S: services/opening.py);
    `token`: the request's claim (a superseded worker stops)."""
    from .services.opening import campaign_open_run

    campaign_open_run(campaign_id=campaign_id, token=token)


@shared_task(name="annotation.campaign_archive_build", queue="default", ignore_result=True)
def campaign_archive_build_task(campaign_id: int) -> None:
    """Build and store a campaign archive too large for a request (over REQUEST_WORK_BUDGET_S:
    services/archiving.py)."""
    from .services.archiving import campaign_archive_run

    campaign_archive_run(campaign_id=campaign_id)
