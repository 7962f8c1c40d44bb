"""Writes of the campaign design. Keyword-only arguments, one transaction each."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from .models import Campaign, Prompt
from .spec import spec_expand, spec_normalize


@transaction.atomic
def campaign_create(*, owner: AbstractBaseUser, spec: Any) -> Campaign:
    """Validate `spec`, store the campaign with its normalised spec, and create all its prompts.

    Raises `SpecError` (400, every problem by field path) before anything is written; the prompts
    are created in the same transaction, so a failure leaves nothing behind.
    """
    normalized = spec_normalize(spec)
    plans = spec_expand(normalized)
    campaign = Campaign.objects.create(
        owner=owner,
        name=normalized["name"],
        kind=normalized["kind"],
        seed=normalized["seed"],
        spec=normalized,
        spec_version=normalized["version"],
        prompt_count=len(plans),
        images_planned=sum(plan.samples for plan in plans),
    )
    Prompt.objects.bulk_create(
        [
            Prompt(campaign=campaign, key=plan.key, position=index, setting=plan.setting, text=plan.text,
                   metadata=plan.metadata, samples=plan.samples, seeds=plan.seeds)
            for index, plan in enumerate(plans)
        ],
        batch_size=2000,
    )
    return campaign


@transaction.atomic
def campaign_status_set(*, campaign: Campaign, status: str) -> Campaign:
    """Set the lifecycle status (draft -> generating -> generated -> open <-> paused -> closed)."""
    Campaign.objects.filter(pk=campaign.pk).update(status=status, updated_at=timezone.now())
    campaign.status = status
    return campaign


@transaction.atomic
def campaign_delete(*, campaign: Campaign) -> list[str]:
    """Soft delete: store the full archive first (every registered archiver), then set `deleted_at`;
    the campaign disappears from every list, API and annotator page. Nothing is removed from the
    database. Returns the storage keys of the archives. Locks the campaign row."""
    from .registry import archivers

    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    keys = [archiver(campaign) for archiver in archivers()]
    Campaign.objects.filter(pk=campaign.pk).update(deleted_at=timezone.now(), updated_at=timezone.now())
    return keys
