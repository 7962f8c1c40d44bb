"""Reads of generation state."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.files.storage import default_storage
from django.db.models import Count, Max, Min, Q, QuerySet
from django.utils import timezone

from campaigns.models import Campaign
from common.errors import NotFoundError

from .models import Image

RATE_WINDOW = timedelta(minutes=10)


def annotator_image_url(*, web_file: str = "", file: str = "", source_url: str = "") -> str:
    """What an annotator is shown: the web rendition, or the URL an image was registered by; never
    the stored original (its metadata, full size). An image stored with no rendition yet gives ""
    (the HIT pool leaves it out until the sweeper makes one: `storage.web_renditions_make`)."""
    return image_url(web_file=web_file, source_url="" if file else source_url)


def image_url(*, web_file: str = "", file: str = "", source_url: str = "") -> str:
    """The one URL rule for an image, everywhere it is shown: the first stored key given (the web copy,
    then the original; through the storage, so signed on S3), else the URL it was imported from, else "".

    Callers pass the keys they want considered: annotators get the web copy or the original
    (`web_file`, `file`); the image API's `url` is the original only (`file=`), its `web_url` the web
    copy only (`web_file=`)."""
    key = web_file or file
    if key:
        return default_storage.url(key)
    return source_url or ""


def image_progress(campaign: Campaign) -> dict[str, Any]:
    """Image counts by status, and the recent rate and ETA, in one query (progress of
    `GET /api/campaigns/{id}/`). Rate: images finished in the last 10 minutes per minute, measured
    from the first of them to now while work remains, and to the last of them once nothing is pending
    or running (so a finished generation keeps the rate it ran at instead of decaying with the clock);
    ETA: pending + running at that rate (null when nothing is moving)."""
    S = Image.Status
    now = timezone.now()
    recent = Q(finished_at__gte=now - RATE_WINDOW)
    counts = Image.objects.filter(campaign=campaign).aggregate(
        images_created=Count("id"),
        images_done=Count("id", filter=Q(status=S.DONE)),
        images_failed=Count("id", filter=Q(status=S.FAILED)),
        images_filtered=Count("id", filter=Q(status=S.FILTERED)),
        images_pending=Count("id", filter=Q(status=S.PENDING)),
        images_running=Count("id", filter=Q(status=S.RUNNING)),
        images_cancelled=Count("id", filter=Q(status=S.CANCELLED)),
        images_excluded=Count("id", filter=Q(excluded=True)),
        _recent=Count("id", filter=recent),
        _recent_first=Min("finished_at", filter=recent),
        _recent_last=Max("finished_at", filter=recent),
    )
    recent_count, first, last = counts.pop("_recent"), counts.pop("_recent_first"), counts.pop("_recent_last")
    remaining = counts["images_pending"] + counts["images_running"]
    rate = None
    if recent_count and first is not None:
        end = now if remaining else (last or now)
        elapsed = max((end - first).total_seconds(), 1.0)
        rate = round(recent_count * 60.0 / elapsed, 2) if recent_count > 1 else None
    counts["images_per_minute"] = rate
    counts["eta_seconds"] = round(remaining * 60.0 / rate) if rate and remaining else (0 if not remaining else None)
    return counts


def image_list(*, campaign: Campaign, status: str | None = None, setting: str | None = None,
               excluded: bool | None = None) -> QuerySet[Image]:
    qs = Image.objects.filter(campaign=campaign).select_related("prompt").order_by("prompt__position", "sample_index")
    if status:
        qs = qs.filter(status=status)
    if setting:
        qs = qs.filter(prompt__setting=setting)
    if excluded is not None:
        qs = qs.filter(excluded=excluded)
    return qs


def image_get(*, user: AbstractBaseUser | AnonymousUser, image_id: int) -> Image:
    """An image of a campaign the user may see (own campaigns; staff: all), or NotFoundError."""
    qs = Image.objects.select_related("campaign", "prompt").filter(pk=image_id, campaign__deleted_at__isnull=True)
    if not getattr(user, "is_staff", False):
        qs = qs.filter(campaign__owner_id=user.pk)
    image = qs.first()
    if image is None:
        raise NotFoundError(f"Image {image_id} not found.")
    return image
