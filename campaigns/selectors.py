"""Reads of the campaign design."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from common.errors import NotFoundError

from .models import Campaign, Prompt
from .registry import progress_providers


def campaign_list(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Campaign]:
    """Campaigns the user may see: their own; staff see all. Soft-deleted ones are hidden."""
    qs = Campaign.objects.filter(deleted_at__isnull=True)
    if not getattr(user, "is_staff", False):
        qs = qs.filter(owner_id=user.pk)
    return qs


def campaign_get(*, user: AbstractBaseUser | AnonymousUser, campaign_id: int) -> Campaign:
    """A campaign the user may see, or NotFoundError (404 also for other owners' campaigns, so
    their existence is not revealed)."""
    campaign = campaign_list(user=user).filter(pk=campaign_id).first()
    if campaign is None:
        raise NotFoundError(f"Campaign {campaign_id} not found.")
    return campaign


def campaign_progress(*, campaign: Campaign) -> dict[str, Any]:
    """Progress counters: the design's own plus whatever generation and annotation contribute."""
    progress: dict[str, Any] = {
        "prompts": campaign.prompt_count,
        # A large design's prompts are created by a task: how far it got, and whether it still runs.
        "prompts_created": (Prompt.objects.filter(campaign=campaign).count() if campaign.prompts_pending
                            else campaign.prompt_count),
        "preparing": campaign.prompts_pending,
        "images_planned": campaign.images_planned,
        "images_done": 0,
        "images_failed": 0,
    }
    for provider in progress_providers():
        progress.update(provider(campaign))
    return progress


def prompt_list(*, campaign: Campaign, setting: str | None = None) -> QuerySet[Prompt]:
    qs = Prompt.objects.filter(campaign=campaign).order_by("position")
    if setting:
        qs = qs.filter(setting=setting)
    return qs


def campaign_references(*, campaign: Campaign) -> dict[str, Any]:
    """The references in force (the spec's, or the occupation preset's default labour statistics) and
    what each does not cover."""
    from .spec.references import coverage

    return coverage(campaign.spec)
