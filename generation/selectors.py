"""Reads of generation state."""
from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from campaigns.models import Campaign

from .models import Image


def image_progress(campaign: Campaign) -> dict[str, Any]:
    """Image counts by status in one query (progress of `GET /api/campaigns/{id}/`)."""
    S = Image.Status
    counts = Image.objects.filter(campaign=campaign).aggregate(
        images_created=Count("id"),
        images_done=Count("id", filter=Q(status=S.DONE)),
        images_failed=Count("id", filter=Q(status=S.FAILED)),
        images_filtered=Count("id", filter=Q(status=S.FILTERED)),
        images_pending=Count("id", filter=Q(status=S.PENDING)),
        images_running=Count("id", filter=Q(status=S.RUNNING)),
        images_cancelled=Count("id", filter=Q(status=S.CANCELLED)),
        images_excluded=Count("id", filter=Q(excluded=True)),
    )
    return counts
