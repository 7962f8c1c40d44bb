"""Writes of the campaign design. Keyword-only arguments, one transaction each."""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from campaigns.spec import PST
from common.errors import ApplicationError, ConflictError
from common.tasks import task_send

from .models import Campaign, Prompt
from .revision import data_changed
from .spec import spec_count_images, spec_count_prompts, spec_expand, spec_normalize
from .spec.base import Problems
from .spec.references import coverage, normalize_references, parse_references_csv, references_of

logger = logging.getLogger(__name__)
PROMPT_CHUNK = 2000


def _inline_max_prompts() -> int:
    return int(getattr(settings, "CAMPAIGN_INLINE_MAX_PROMPTS", 5000))


@transaction.atomic
def campaign_create(*, owner: User, spec: Any) -> Campaign:
    """Validate `spec` and store the campaign with its normalised spec and its prompts.

    Raises `SpecError` (400, every problem by field path, limits included) before anything is
    written. A design of up to CAMPAIGN_INLINE_MAX_PROMPTS prompts gets them here, in the same
    transaction; a larger one is stored with `prompts_pending` and its prompts are created by the
    `campaigns.prompts_expand` task, published when this transaction commits. If the broker cannot
    take it then, the campaign stays `preparing` and the sweeper (`campaigns.prompts_sweep`)
    publishes the expansion again once it can.
    """
    normalized = spec_normalize(spec)
    prompt_count = spec_count_prompts(normalized)
    deferred = prompt_count > _inline_max_prompts()
    campaign = Campaign.objects.create(
        owner=owner,
        name=normalized["name"],
        kind=normalized["kind"],
        seed=normalized["seed"],
        spec=normalized,
        spec_version=normalized["version"],
        prompt_count=prompt_count,
        images_planned=spec_count_images(normalized),
        prompts_pending=deferred,
    )
    if deferred:
        transaction.on_commit(lambda: _publish_expansion(campaign))
    else:
        _prompts_write(campaign, normalized, start=0)
    return campaign


def _publish_expansion(campaign: Campaign) -> bool:
    """Publish the expansion task (by name: services do not import tasks); a broker failure is
    logged and left to the sweeper."""
    try:
        task_send("campaigns.prompts_expand", args=[campaign.pk])
    except Exception as exc:  # the broker's connection errors (kombu / redis / OSError)
        logger.warning("campaign %s: the broker refused the prompt expansion (%s); the sweeper will retry",
                       campaign.pk, type(exc).__name__)
        return False
    return True


def _prompts_write(campaign: Campaign, normalized: dict[str, Any], *, start: int,
                   chunk: int | None = None) -> int:
    """Create the campaign's prompts from position `start` on (all of them, or in chunks of `chunk`,
    each committed on its own so progress shows); returns how many exist afterwards."""
    plans = spec_expand(normalized)
    step = chunk or len(plans) or 1
    for begin in range(start, len(plans), step):
        with transaction.atomic():
            Prompt.objects.bulk_create(
                [Prompt(campaign=campaign, key=plan.key, position=index, setting=plan.setting, text=plan.text,
                        metadata=plan.metadata, samples=plan.samples, seeds=plan.seeds,
                        template_index=plan.template_index, template=plan.template)
                 for index, plan in enumerate(plans[begin:begin + step], start=begin)],
                batch_size=PROMPT_CHUNK, ignore_conflicts=True)
    return len(plans)


def campaign_prompts_expand(*, campaign_id: int) -> dict[str, Any]:
    """The work of the `campaigns.prompts_expand` task: create a deferred campaign's prompts in
    chunks (each its own transaction; a redelivery resumes after the last whole chunk), then clear
    `prompts_pending`. Returns {"found", "created"}."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        return {"found": False, "created": 0}
    if not campaign.prompts_pending:
        return {"found": True, "created": 0}
    before = Prompt.objects.filter(campaign=campaign).count()
    total = _prompts_write(campaign, campaign.spec, start=before, chunk=PROMPT_CHUNK)
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        created = Prompt.objects.filter(campaign=locked).count()
        if created >= locked.prompt_count:
            Campaign.objects.filter(pk=campaign.pk).update(prompts_pending=False, updated_at=timezone.now())
        else:  # pragma: no cover - a spec that no longer expands to its count
            logger.error("campaign %s: %d prompts of %d after expansion", campaign.pk, created, locked.prompt_count)
    return {"found": True, "created": total - before}


def campaign_prompts_sweep(*, stale_s: float) -> list[int]:
    """Re-publish the expansion of campaigns whose prompts are still pending after `stale_s`
    seconds without a change (the task was lost: flushed broker, dead worker past retries).
    Duplicates are harmless: the expansion resumes where the prompts end."""
    cutoff = timezone.now() - timedelta(seconds=stale_s)
    ids = list(Campaign.objects.filter(prompts_pending=True, deleted_at__isnull=True, updated_at__lt=cutoff)
               .values_list("id", flat=True))
    for campaign_id in ids:
        Campaign.objects.filter(pk=campaign_id).update(updated_at=timezone.now())
        _publish_expansion(Campaign(pk=campaign_id))
    return ids


@transaction.atomic
def campaign_status_set(*, campaign: Campaign, status: str) -> Campaign:
    """Set the lifecycle status (draft -> generating -> generated -> open <-> paused -> closed)."""
    # The status is part of what a report shows: a new data revision (campaigns.revision).
    Campaign.objects.filter(pk=campaign.pk).update(status=status, updated_at=timezone.now(),
                                                   data_changes=F("data_changes") + 1)
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


@transaction.atomic
def campaign_references_upload(*, campaign: Campaign, data: bytes) -> dict[str, Any]:
    """Add or replace the spec's references from a CSV (columns name, source, identity, percent_female):
    each reference of the file replaces the one of the same name, the others stay (the occupation
    preset's default labour statistics included). All or nothing: any bad row -> 400 naming it
    (`rows.<line>`), nothing written. A closed campaign's references no longer change (409)."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status == Campaign.Status.CLOSED:
        raise ConflictError("The campaign is closed: its references can no longer be changed.",
                            errors={"status": ["closed"]})
    if campaign.kind != PST:
        raise ApplicationError("References (%F per identity) apply to PST campaigns only.",
                               errors={"file": ["this is not a PST campaign"]})
    uploaded, errors = parse_references_csv(data)
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid references CSV, {first}: {errors[first][0]}", errors=errors)
    names = {r["name"] for r in uploaded}
    merged = [r for r in references_of(campaign.spec) if r["name"] not in names] + uploaded
    problems = Problems()
    normalized = normalize_references(merged, problems, kind=campaign.kind)
    problems.raise_if_any()
    campaign.spec = {**campaign.spec, "references": normalized}
    campaign.save(update_fields=["spec", "updated_at"])
    data_changed(campaign_ids=[campaign.pk])  # the references are part of the report
    return {"uploaded": sorted(names), **coverage(campaign.spec)}
