"""Writes of generation state: start / cancel / retry a campaign's generation, claim and complete
images (called by the Celery task), exclude / include images. Keyword-only, transactional."""
from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from campaigns.models import Campaign, Prompt
from campaigns.services import campaign_status_set
from common.errors import ApplicationError, ConflictError

from .backends import GenerationItem, GenerationOutput, OutOfMemory, PermanentError, TransientError, backend_get
from .models import Image
from .storage import image_store

logger = logging.getLogger(__name__)
S = Image.Status
CS = Campaign.Status
# Generation may (re)start before annotation opens; afterwards the image set is frozen.
STARTABLE = (CS.DRAFT, CS.GENERATING, CS.GENERATED)


def _batch_size(campaign: Campaign) -> int:
    params = campaign.spec["backend"]
    return max(1, backend_get(params["name"]).batch_size(params))


def images_plan(*, campaign: Campaign) -> int:
    """Create the Image rows a campaign is missing (one per prompt and sample index); returns how
    many were created. Safe to call concurrently: the unique constraint settles races."""
    before = Image.objects.filter(campaign=campaign).count()
    rows = []
    for prompt_id, samples, seeds in Prompt.objects.filter(campaign=campaign).values_list("id", "samples", "seeds"):
        rows.extend(Image(campaign=campaign, prompt_id=prompt_id, sample_index=index, seed=seeds[index])
                    for index in range(samples))
    Image.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    return Image.objects.filter(campaign=campaign).count() - before


def _enqueue_pending(campaign: Campaign) -> tuple[int, int]:
    """Queue every pending image in batches of the backend's batch size, after commit."""
    from .tasks import GENERATION_QUEUE, images_generate

    ids = list(Image.objects.filter(campaign=campaign, status=S.PENDING)
               .order_by("prompt__position", "sample_index").values_list("id", flat=True))
    size = _batch_size(campaign)
    batches = [ids[i:i + size] for i in range(0, len(ids), size)]
    for batch in batches:
        images_generate.apply_async_on_commit(args=[batch], queue=GENERATION_QUEUE)
    return len(ids), len(batches)


@transaction.atomic
def generation_start(*, campaign: Campaign) -> dict[str, int]:
    """Create the missing images and queue every pending one. Idempotent: a second call queues
    the still-pending images again (a duplicate message is a no-op for images already claimed).

    Resumes cancelled images, and re-queues `running` images whose claim is older than
    GENERATION_RUNNING_STALE_S (their message was lost). Locks the campaign row, so two
    concurrent starts run one after the other.
    """
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status not in STARTABLE:
        raise ConflictError(f"Campaign {campaign.pk} is {campaign.status}: images can no longer be generated.")
    if campaign.spec["backend"]["name"] == "import":
        raise ApplicationError("This campaign's backend is `import`: upload its images instead "
                               "(POST /api/campaigns/{id}/images/import/ or `manage.py campaign import-images`).")
    created = images_plan(campaign=campaign)
    resumed = Image.objects.filter(campaign=campaign, status=S.CANCELLED).update(
        status=S.PENDING, task_id="", updated_at=timezone.now())
    stale_before = timezone.now() - timedelta(seconds=settings.GENERATION_RUNNING_STALE_S)
    Image.objects.filter(campaign=campaign, status=S.RUNNING, started_at__lt=stale_before).update(
        status=S.PENDING, task_id="", updated_at=timezone.now())
    queued, batches = _enqueue_pending(campaign)
    if queued:
        campaign_status_set(campaign=campaign, status=CS.GENERATING)
    else:
        campaign_generation_refresh(campaign_id=campaign.pk)
    return {"created": created, "resumed": resumed, "queued": queued, "batches": batches}


@transaction.atomic
def generation_cancel(*, campaign: Campaign) -> dict[str, int]:
    """Pending and running images become cancelled. A running task checks its images' status
    before each model call and before storing a result, so it stops at the next batch boundary
    and discards what it was generating. `generation_start` resumes cancelled images."""
    cancelled = Image.objects.filter(campaign=campaign, status__in=(S.PENDING, S.RUNNING)).update(
        status=S.CANCELLED, task_id="", updated_at=timezone.now())
    if campaign.status == CS.GENERATING:
        done = Image.objects.filter(campaign=campaign, status=S.DONE).exists()
        campaign_status_set(campaign=campaign, status=CS.GENERATED if done and not cancelled else CS.DRAFT)
    return {"cancelled": cancelled}


@transaction.atomic
def generation_retry_failed(*, campaign: Campaign) -> dict[str, int]:
    """Failed images go back to pending (their error cleared) and are queued."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status not in STARTABLE:
        raise ConflictError(f"Campaign {campaign.pk} is {campaign.status}: images can no longer be generated.")
    reset = Image.objects.filter(campaign=campaign, status=S.FAILED).update(
        status=S.PENDING, error="", task_id="", updated_at=timezone.now())
    queued, batches = _enqueue_pending(campaign)
    if queued:
        campaign_status_set(campaign=campaign, status=CS.GENERATING)
    return {"reset": reset, "queued": queued, "batches": batches}


def campaign_generation_refresh(*, campaign_id: int) -> None:
    """generating -> generated once no image is pending or running."""
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None or campaign.status != CS.GENERATING:
            return
        if not Image.objects.filter(campaign_id=campaign_id, status__in=(S.PENDING, S.RUNNING)).exists():
            campaign_status_set(campaign=campaign, status=CS.GENERATED)


@transaction.atomic
def images_claim(*, image_ids: Iterable[int], task_id: str) -> list[Image]:
    """Mark the images this task may work on as running and return them.

    Locking precondition: rows are locked with SELECT ... FOR UPDATE (in id order, so two tasks
    never deadlock) and the status is checked under the lock. A task takes `pending` images, and
    `running` images claimed under its own task id: a redelivery after its worker died, or a retry.
    Done, failed, filtered, cancelled, and images another task is running are left alone, so a
    duplicate message never generates or stores an image twice.
    """
    rows = list(Image.objects.select_for_update().filter(id__in=list(image_ids)).order_by("id"))
    mine = [r.pk for r in rows if r.status == S.PENDING or (r.status == S.RUNNING and r.task_id == task_id)]
    if not mine:
        return []
    Image.objects.filter(id__in=mine).update(status=S.RUNNING, task_id=task_id, attempts=F("attempts") + 1,
                                              started_at=timezone.now(), updated_at=timezone.now())
    return list(Image.objects.filter(id__in=mine).select_related("prompt", "campaign")
                .order_by("prompt__position", "sample_index"))


def image_complete(*, image_id: int, task_id: str, output: GenerationOutput, backend: str) -> bool:
    """Store a generated image's file and record the result, unless the image was cancelled (or
    taken over) meanwhile. The file goes to storage first, outside the transaction: it is
    content-addressed, so a repeat finds it. Returns whether the result was recorded."""
    if not Image.objects.filter(pk=image_id, status=S.RUNNING, task_id=task_id).exists():
        return False  # cancelled while the model ran: store nothing
    stored = image_store(output.data) if output.status == S.DONE and output.data else None
    with transaction.atomic():
        image = Image.objects.select_for_update().filter(pk=image_id).first()
        if image is None or image.status != S.RUNNING or image.task_id != task_id:
            return False
        image.status = output.status
        image.error = output.error
        image.backend = backend
        image.model = output.model
        image.revision = output.revision
        image.params = output.params
        image.wall_time_s = output.wall_time_s
        image.revised_prompt = output.revised_prompt
        image.synthetic = output.synthetic
        image.finished_at = timezone.now()
        if stored is not None:
            image.file, image.web_file, image.sha256 = stored.file, stored.web_file, stored.sha256
            image.width, image.height = stored.width, stored.height
        image.save()
        return True


def images_fail(*, image_ids: Iterable[int], task_id: str, error: str) -> int:
    """Mark this task's running images failed with the reason (a permanent error, or retries
    exhausted)."""
    return Image.objects.filter(id__in=list(image_ids), status=S.RUNNING, task_id=task_id).update(
        status=S.FAILED, error=error[:5000], finished_at=timezone.now(), updated_at=timezone.now())


def images_generate_batch(*, image_ids: list[int], task_id: str) -> dict[str, Any]:
    """The work of one generation task: claim, generate in model calls of the backend's batch size
    (halved on out-of-memory), store. Raises TransientError for the task to retry; the images stay
    claimed under the task id, which a retry keeps."""
    images = images_claim(image_ids=image_ids, task_id=task_id)
    if not images:
        return {"claimed": 0, "recorded": 0}
    campaign = images[0].campaign
    params = campaign.spec["backend"]
    backend = backend_get(params["name"])
    chunk = max(1, min(backend.batch_size(params), len(images)))
    todo = images
    recorded = 0
    while todo:
        # Cancelled (or re-queued elsewhere) images drop out before each model call.
        still_mine = set(Image.objects.filter(id__in=[i.pk for i in todo], status=S.RUNNING, task_id=task_id)
                         .values_list("id", flat=True))
        todo = [i for i in todo if i.pk in still_mine]
        if not todo:
            break
        batch = todo[:chunk]
        try:
            outputs = backend.generate([GenerationItem(i.pk, i.prompt.text, i.seed) for i in batch], params)
        except OutOfMemory:
            if chunk == 1:
                raise
            chunk = max(1, chunk // 2)
            logger.warning("out of memory: batch size halved to %d (task %s)", chunk, task_id)
            continue
        except PermanentError as exc:
            images_fail(image_ids=[i.pk for i in todo], task_id=task_id, error=str(exc))
            break
        if len(outputs) != len(batch):
            raise TransientError(f"backend returned {len(outputs)} images for {len(batch)} prompts")
        for image, output in zip(batch, outputs, strict=True):
            recorded += image_complete(image_id=image.pk, task_id=task_id, output=output, backend=params["name"])
        todo = todo[len(batch):]
    campaign_generation_refresh(campaign_id=campaign.pk)
    return {"claimed": len(images), "recorded": recorded}


@transaction.atomic
def image_exclude(*, image: Image, reason: str) -> Image:
    """Exclude an image from annotation and metrics (e.g. a paired image that shows one person)."""
    reason = (reason or "").strip()
    if not reason:
        raise ApplicationError("A reason is required.", errors={"reason": ["This field is required."]})
    image.excluded = True
    image.exclusion_reason = reason[:500]
    image.save(update_fields=["excluded", "exclusion_reason", "updated_at"])
    return image


@transaction.atomic
def image_include(*, image: Image) -> Image:
    image.excluded = False
    image.exclusion_reason = ""
    image.save(update_fields=["excluded", "exclusion_reason", "updated_at"])
    return image
