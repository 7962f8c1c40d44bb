"""Writes of generation state: start / cancel / retry a campaign's generation, claim and complete
images (called by the Celery task), exclude / include images. Keyword-only, transactional."""
from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone

from campaigns.models import Campaign, Prompt
from campaigns.revision import data_changed
from campaigns.services import campaign_status_set
from common.errors import ApplicationError, ConflictError
from common.outbound import clip
from common.tasks import task_send

from .backends import GenerationItem, GenerationOutput, OutOfMemory, PermanentError, TransientError, backend_get
from .bulk import images_plan_insert
from .models import Image
from .storage import image_store

# The Celery queue of the GPU hosts (generation.tasks routes its tasks there).
GENERATION_QUEUE = "generation"

logger = logging.getLogger(__name__)
S = Image.Status
CS = Campaign.Status
ERROR_CHARS = 1000  # an image's stored error text (shown in the API and the console)
# Generation may (re)start before annotation opens; afterwards the image set is frozen.
STARTABLE = (CS.DRAFT, CS.GENERATING, CS.GENERATED)


def _batch_size(campaign: Campaign) -> int:
    params = campaign.spec["backend"]
    return max(1, backend_get(params["name"]).batch_size(params))


def images_plan(*, campaign: Campaign, prompt_chunk: int | None = None) -> int:
    """Create the Image rows a campaign is missing (one per prompt and sample index); returns how
    many were created. Safe to call concurrently: the unique constraint settles races. With
    `prompt_chunk`, rows are written for that many prompts at a time, each chunk committed on its
    own (the planning task: progress shows while it runs)."""
    before = Image.objects.filter(campaign=campaign).count()
    prompts = Prompt.objects.filter(campaign=campaign).order_by("position").values_list("id", "samples", "seeds")
    chunk: list[tuple[int, int, list[int]]] = []

    def flush() -> None:
        # One INSERT ... SELECT per chunk on PostgreSQL (generation.bulk), ignoring the rows that exist.
        with transaction.atomic():
            if images_plan_insert(campaign_id=campaign.pk, prompts=chunk, now=timezone.now()):
                data_changed(campaign_ids=[campaign.pk])  # the report counts images
        chunk.clear()

    for n, prompt in enumerate(prompts.iterator(chunk_size=2000), start=1):
        chunk.append(prompt)
        if (prompt_chunk and n % prompt_chunk == 0) or len(chunk) >= 2000:
            flush()
    flush()
    return Image.objects.filter(campaign=campaign).count() - before


def _broker_errors() -> tuple[type[BaseException], ...]:
    from common.middleware import _unavailable_errors

    return (*(e for e in _unavailable_errors() if not e.__module__.startswith("django")), OSError)


def images_publish(*, campaign: Campaign, image_ids: list[int]) -> dict[str, int]:
    """Hand pending images to the broker now, in batches of the backend's batch size, and stamp
    `queued_at` on those that went. Stops at the first broker failure: the rest keep their old stamp
    (or none) for the sweeper. Call it after the transaction that made the images pending has
    committed (a worker must find them). Returns {"queued", "batches", "unqueued"}."""
    size = _batch_size(campaign)
    batches = [image_ids[i:i + size] for i in range(0, len(image_ids), size)]
    run = _Publishing(campaign.pk, len(image_ids))
    for batch in batches:
        run.send(batch)
    run.stamp()
    return run.report()


class _Publishing:
    """One run of publishing a campaign's batches: stops at the first broker failure, stamps
    `queued_at` on what went."""

    def __init__(self, campaign_id: int, total: int):
        self.campaign_id = campaign_id
        self.total = total
        self.sent: list[int] = []
        self.batches = 0
        self.broken = False

    def send(self, batch: list[int]) -> None:
        if self.broken:
            return
        try:
            task_send("generation.images_generate", args=[batch], queue=GENERATION_QUEUE)
        except _broker_errors() as exc:
            self.broken = True
            logger.warning("campaign %s: the broker refused a generation batch (%s); %d images wait for the "
                           "sweeper", self.campaign_id, type(exc).__name__, self.total - len(self.sent))
            return
        self.sent.extend(batch)
        self.batches += 1

    def stamp(self) -> None:
        now = timezone.now()
        for i in range(0, len(self.sent), 5000):
            Image.objects.filter(id__in=self.sent[i:i + 5000], status=S.PENDING).update(queued_at=now)

    def report(self) -> dict[str, int]:
        return {"queued": len(self.sent), "batches": self.batches, "unqueued": self.total - len(self.sent)}


def _publish_on_commit(campaign: Campaign, ids: list[int], report: dict[str, Any]) -> dict[str, Any]:
    """Queue `ids` once the current transaction commits (enqueue on commit: the state change is
    durable first; the database is the outbox), one callback per batch. `report` gets the counts
    it expects now and the real ones when the messages went (the service's own transaction commits
    before it returns, so its caller reads them); if the broker is down they say `unqueued`, and
    the sweeper queues those images once it is back."""
    size = _batch_size(campaign)
    batches = [ids[i:i + size] for i in range(0, len(ids), size)]
    report.update(queued=len(ids), batches=len(batches), unqueued=0)
    run = _Publishing(campaign.pk, len(ids))

    def send(batch: list[int], last: bool) -> None:
        run.send(batch)
        if last:
            run.stamp()
            report.update(run.report())

    for n, batch in enumerate(batches, start=1):
        transaction.on_commit(functools.partial(send, batch, n == len(batches)))
    return report


def _pending_ids(campaign: Campaign) -> list[int]:
    return list(Image.objects.filter(campaign=campaign, status=S.PENDING)
                .order_by("prompt__position", "sample_index").values_list("id", flat=True))


def _inline_max_images() -> int:
    return int(getattr(settings, "GENERATION_INLINE_MAX_IMAGES", 5000))


@transaction.atomic
def generation_start(*, campaign: Campaign) -> dict[str, Any]:
    """Create the missing images and queue every pending one. Idempotent: a second call queues
    the still-pending images again (a duplicate message is a no-op for images already claimed).

    Resumes cancelled images, and re-queues `running` images whose claim is older than
    GENERATION_RUNNING_STALE_S (their message was lost). Locks the campaign row, so two
    concurrent starts run one after the other.

    Queueing happens on commit (the status change and the images are durable first); a broker
    that cannot take the messages leaves them `unqueued` for the sweeper (`generation.sweep`).
    A campaign planning more than GENERATION_INLINE_MAX_IMAGES images is planned and queued by
    the `generation.plan` task instead (`planning: true`): no request creates or queues that many.
    """
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status not in STARTABLE:
        raise ConflictError(f"Campaign {campaign.pk} is {campaign.status}: images can no longer be generated.")
    if campaign.spec["backend"]["name"] == "import":
        raise ApplicationError("This campaign's backend is `import`: upload its images instead "
                               "(POST /api/campaigns/{id}/images/import/ or `manage.py campaign import-images`).")
    if campaign.prompts_pending:
        raise ConflictError(f"Campaign {campaign.pk}'s prompts are still being created; generate once they are "
                            "(see progress.prompts_created).")
    if campaign.images_planned > _inline_max_images():
        campaign_status_set(campaign=campaign, status=CS.GENERATING)
        transaction.on_commit(lambda: _publish_plan(campaign.pk))
        return {"created": 0, "resumed": 0, "queued": 0, "batches": 0, "unqueued": 0, "planning": True}
    created = images_plan(campaign=campaign)
    resumed, _stale = _reset_to_pending(campaign)
    ids = _pending_ids(campaign)
    report = _publish_on_commit(campaign, ids, {"created": created, "resumed": resumed, "planning": False})
    if ids:
        campaign_status_set(campaign=campaign, status=CS.GENERATING)
    else:
        campaign_generation_refresh(campaign_id=campaign.pk)
    return report


def _reset_to_pending(campaign: Campaign) -> tuple[int, int]:
    """Cancelled images and running ones whose claim is stale (lost message) back to pending, not
    yet queued. Returns (resumed, stale)."""
    resumed = Image.objects.filter(campaign=campaign, status=S.CANCELLED).update(
        status=S.PENDING, task_id="", queued_at=None, updated_at=timezone.now())
    stale_before = timezone.now() - timedelta(seconds=settings.GENERATION_RUNNING_STALE_S)
    stale = Image.objects.filter(campaign=campaign, status=S.RUNNING, started_at__lt=stale_before).update(
        status=S.PENDING, task_id="", queued_at=None, updated_at=timezone.now())
    return resumed, stale


def _publish_plan(campaign_id: int) -> None:
    try:
        task_send("generation.plan", args=[campaign_id])
    except _broker_errors() as exc:
        logger.warning("campaign %s: the broker refused the planning task (%s); the sweeper will queue it",
                       campaign_id, type(exc).__name__)


def generation_plan(*, campaign_id: int) -> dict[str, int]:
    """The work of the `generation.plan` task for a large campaign: create its images in chunks,
    resume cancelled and stale ones, and queue every pending image that has no message yet, in
    chunks (published, then stamped). Stops if the campaign left `generating` (cancelled)."""
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is None or campaign.status != CS.GENERATING:
        return {"created": 0, "queued": 0, "unqueued": 0}
    created = images_plan(campaign=campaign, prompt_chunk=1000)
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign_id)
        if locked.status != CS.GENERATING:
            return {"created": created, "queued": 0, "unqueued": 0}
        _reset_to_pending(locked)
    counts = _publish_unqueued(campaign)
    campaign_generation_refresh(campaign_id=campaign_id)
    return {"created": created, **counts}


def _publish_unqueued(campaign: Campaign, *, before: Any = None) -> dict[str, int]:
    """Queue the campaign's pending images that have no message (or, with `before`, one older than
    that), in chunks. Returns {"queued", "unqueued"}."""
    qs = Image.objects.filter(campaign=campaign, status=S.PENDING)
    qs = qs.filter(Q(queued_at__isnull=True) | Q(queued_at__lt=before)) if before is not None \
        else qs.filter(queued_at__isnull=True)
    ids = list(qs.order_by("prompt__position", "sample_index").values_list("id", flat=True))
    queued = 0
    for i in range(0, len(ids), 5000):
        result = images_publish(campaign=campaign, image_ids=ids[i:i + 5000])
        queued += result["queued"]
        if result["unqueued"]:
            break
    return {"queued": queued, "unqueued": len(ids) - queued}


@transaction.atomic
def generation_cancel(*, campaign: Campaign) -> dict[str, int]:
    """Pending and running images become cancelled. A running task checks its images' status
    before each model call and before storing a result, so it stops at the next batch boundary
    and discards what it was generating. `generation_start` resumes cancelled images."""
    cancelled = Image.objects.filter(campaign=campaign, status__in=(S.PENDING, S.RUNNING)).update(
        status=S.CANCELLED, task_id="", queued_at=None, updated_at=timezone.now())
    if campaign.status == CS.GENERATING:
        done = Image.objects.filter(campaign=campaign, status=S.DONE).exists()
        campaign_status_set(campaign=campaign, status=CS.GENERATED if done and not cancelled else CS.DRAFT)
    return {"cancelled": cancelled}


@transaction.atomic
def generation_retry_failed(*, campaign: Campaign) -> dict[str, Any]:
    """Failed images go back to pending (their error cleared) and are queued on commit."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.status not in STARTABLE:
        raise ConflictError(f"Campaign {campaign.pk} is {campaign.status}: images can no longer be generated.")
    reset = Image.objects.filter(campaign=campaign, status=S.FAILED).update(
        status=S.PENDING, error="", task_id="", queued_at=None, updated_at=timezone.now())
    if reset:
        data_changed(campaign_ids=[campaign.pk])
    ids = _pending_ids(campaign)
    report = _publish_on_commit(campaign, ids, {"reset": reset})
    if ids:
        campaign_status_set(campaign=campaign, status=CS.GENERATING)
    return report


def generation_sweep() -> dict[str, int]:
    """Find lost generation work and queue it again (Celery beat, every GENERATION_SWEEP_INTERVAL_S):

    - `running` images whose claim is older than GENERATION_RUNNING_STALE_S go back to pending;
    - in `generating` campaigns, pending images that never reached the broker (`queued_at` empty
      for longer than GENERATION_ENQUEUE_GRACE_S: the broker was down at commit) are queued;
    - when the generation queue is empty, pending images queued longer than GENERATION_STALL_S ago
      are queued again: their message is gone (a flushed broker, a consumer of another deployment
      that took it and claimed nothing). Duplicates are harmless (images_claim);
    - a large campaign whose planning task was lost (fewer images than planned, none created for
      GENERATION_STALL_S) is planned again; a campaign with nothing left to do becomes `generated`.
    """
    now = timezone.now()
    grace = now - timedelta(seconds=settings.GENERATION_ENQUEUE_GRACE_S)
    stall = now - timedelta(seconds=settings.GENERATION_STALL_S)
    stale_running = now - timedelta(seconds=settings.GENERATION_RUNNING_STALE_S)
    totals = {"reset": 0, "queued": 0, "unqueued": 0, "planned": 0, "finished": 0}
    queue_empty = generation_queue_size() == 0
    campaigns = list(Campaign.objects.filter(status=CS.GENERATING, deleted_at__isnull=True))
    for campaign in campaigns:
        totals["reset"] += Image.objects.filter(campaign=campaign, status=S.RUNNING, started_at__lt=stale_running) \
            .update(status=S.PENDING, task_id="", queued_at=None, updated_at=now)
        stats = Image.objects.filter(campaign=campaign).aggregate(
            n=Count("id"), last_created=Max("created_at"),
            open=Count("id", filter=Q(status__in=(S.PENDING, S.RUNNING))))
        if campaign.images_planned > _inline_max_images() and stats["n"] < campaign.images_planned \
                and (stats["last_created"] or campaign.updated_at) < stall:
            _publish_plan(campaign.pk)
            totals["planned"] += 1
            continue
        if not stats["open"] and stats["n"] >= campaign.images_planned:
            campaign_generation_refresh(campaign_id=campaign.pk)
            totals["finished"] += 1
            continue
        lost = Image.objects.filter(campaign=campaign, status=S.PENDING, queued_at__isnull=True,
                                    updated_at__lte=grace)
        ids = list(lost.order_by("prompt__position", "sample_index").values_list("id", flat=True))
        if queue_empty:
            ids += list(Image.objects.filter(campaign=campaign, status=S.PENDING, queued_at__lt=stall)
                        .order_by("prompt__position", "sample_index").values_list("id", flat=True))
        for i in range(0, len(ids), 5000):
            result = images_publish(campaign=campaign, image_ids=ids[i:i + 5000])
            totals["queued"] += result["queued"]
            totals["unqueued"] += result["unqueued"]
            if result["unqueued"]:
                break
    totals["web_renditions"] = web_renditions_make()
    return totals


def web_renditions_make(*, limit: int = 200) -> int:
    """Make the missing web renditions of stored images (an archive row may name only `file`), at
    most `limit` a sweep: annotators are shown only web renditions, and the HIT pool leaves an image
    out until it has one (docs/security.md, "Images"). An original that cannot be read or decoded is
    logged and excluded from the pool, so it is not tried again every sweep."""
    from .storage import web_rendition_of

    made = 0
    rows = (Image.objects.filter(web_file="", excluded=False).exclude(file="").order_by("pk")
            .values_list("pk", "file", "sha256")[:limit])
    for pk, key, sha in rows:
        try:
            web = web_rendition_of(key, sha, max_bytes=int(settings.IMPORT_MAX_FILE_BYTES))
        except Exception as exc:  # noqa: BLE001  (storage and PIL raise many kinds)
            logger.warning("no web rendition for image %s: %s", pk, clip(str(exc)))
            image = Image.objects.get(pk=pk)
            image_exclude(image=image, reason="no web rendition: the stored original cannot be read as an image")
            continue
        made += Image.objects.filter(pk=pk, web_file="").update(web_file=web)
    return made


def generation_queue_size() -> int | None:
    """Messages waiting in the broker's generation queue (None when it cannot be asked)."""
    from config.celery import app

    try:
        with app.connection_for_read() as connection:
            channel = connection.default_channel
            try:
                return int(channel.queue_declare(queue=GENERATION_QUEUE, passive=True).message_count)
            except Exception as exc:  # kombu: a queue that was never declared (or was flushed) is "not found"
                if "NOT_FOUND" in str(exc) or "not found" in str(exc).lower() or "no queue" in str(exc).lower():
                    return 0
                raise
    except _broker_errors():
        return None


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
        image.error = clip(output.error, ERROR_CHARS)  # text from a backend or a remote service: bounded
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
        data_changed(campaign_ids=[image.campaign_id])  # the report counts images done / filtered
        return True


def images_fail(*, image_ids: Iterable[int], task_id: str, error: str) -> int:
    """Mark this task's running images failed with the reason (a permanent error, or retries
    exhausted)."""
    with transaction.atomic():
        ids = list(image_ids)
        failed = Image.objects.filter(id__in=ids, status=S.RUNNING, task_id=task_id).update(
            status=S.FAILED, error=clip(error, ERROR_CHARS), finished_at=timezone.now(), updated_at=timezone.now())
        if failed:  # the report counts failed images
            data_changed(campaign_ids=Image.objects.filter(id__in=ids).values_list("campaign_id", flat=True))
        return failed


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
    data_changed(campaign_ids=[image.campaign_id])  # reports leave excluded images out
    return image


@transaction.atomic
def image_include(*, image: Image) -> Image:
    image.excluded = False
    image.exclusion_reason = ""
    image.save(update_fields=["excluded", "exclusion_reason", "updated_at"])
    data_changed(campaign_ids=[image.campaign_id])  # reports leave excluded images out
    return image
