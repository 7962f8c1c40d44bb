"""Report building, caching (until the data changes) and background builds."""
from __future__ import annotations

import json
import time
from typing import Any

from django.db import IntegrityError, transaction

from campaigns.models import Campaign

from .extract import campaign_data, campaign_data_version
from .models import ReportSnapshot
from .report import ReportOptions, report_from_data

# Above this many answers a report is built by a worker (default queue) instead of in the request.
ASYNC_ANSWER_THRESHOLD = 300_000


def report_build(*, campaign: Campaign, options: ReportOptions) -> dict[str, Any]:
    """Build the report now (no cache)."""
    data = campaign_data(campaign, exclude_blocked=options.exclude_blocked)
    report = report_from_data(data, options)
    # Round-trip through JSON so cached and fresh reports are identical (NaN -> None already).
    return json.loads(json.dumps(report))


def report_get(*, campaign: Campaign, options: ReportOptions, allow_async: bool = True) -> tuple[str, dict[str, Any]]:
    """The report for these options: ("ready", report) from the snapshot of the current data, built
    now if needed; or ("building", progress) when a worker builds it (large campaigns)."""
    version = campaign_data_version(campaign)
    key = options.key()
    snap = ReportSnapshot.objects.filter(campaign=campaign, options_key=key, data_version=version).first()
    if snap and snap.status == ReportSnapshot.Status.READY:
        return "ready", snap.payload
    if snap and snap.status == ReportSnapshot.Status.BUILDING:
        return "building", {"status": "building", "progress": snap.progress, "snapshot": snap.pk}
    answers = campaign.answers.count()
    if allow_async and answers > ASYNC_ANSWER_THRESHOLD:
        snap = _snapshot_claim(campaign, key, version)
        if snap is not None:
            from .tasks import report_build_task

            transaction.on_commit(lambda: report_build_task.delay(snap.pk))
            return "building", {"status": "building", "progress": 0.0, "snapshot": snap.pk}
        return report_get(campaign=campaign, options=options, allow_async=False)
    started = time.monotonic()
    report = report_build(campaign=campaign, options=options)
    _snapshot_store(campaign, key, version, report, time.monotonic() - started)
    return "ready", report


def _snapshot_claim(campaign: Campaign, key: str, version: str) -> ReportSnapshot | None:
    try:
        with transaction.atomic():
            return ReportSnapshot.objects.create(campaign=campaign, options_key=key, data_version=version)
    except IntegrityError:
        return None


def _snapshot_store(campaign: Campaign, key: str, version: str, report: dict[str, Any], seconds: float) -> None:
    ReportSnapshot.objects.update_or_create(
        campaign=campaign, options_key=key, data_version=version,
        defaults={"status": ReportSnapshot.Status.READY, "payload": report, "progress": 1.0, "build_seconds": seconds},
    )
    # Older snapshots of this campaign and options are stale: keep the table small.
    ReportSnapshot.objects.filter(campaign=campaign, options_key=key).exclude(data_version=version).delete()


def report_build_snapshot(*, snapshot_id: int) -> None:
    """Worker side of a background build; idempotent (a ready snapshot is left alone)."""
    snap = ReportSnapshot.objects.select_related("campaign").filter(pk=snapshot_id).first()
    if snap is None or snap.status == ReportSnapshot.Status.READY:
        return
    options = ReportOptions(**_options_from_key(snap.options_key))
    started = time.monotonic()
    try:
        ReportSnapshot.objects.filter(pk=snap.pk).update(progress=0.1)
        report = report_build(campaign=snap.campaign, options=options)
    except Exception as exc:  # record, then let Celery log it
        ReportSnapshot.objects.filter(pk=snap.pk).update(status=ReportSnapshot.Status.FAILED, error=str(exc))
        raise
    ReportSnapshot.objects.filter(pk=snap.pk).update(status=ReportSnapshot.Status.READY, payload=report, progress=1.0,
                                                     build_seconds=time.monotonic() - started)


def _options_from_key(key: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    defaults = ReportOptions()
    for part in key.split("|"):
        name, _, raw = part.partition("=")
        default = getattr(defaults, name)
        if raw == "None":
            out[name] = None
        elif isinstance(default, bool):
            out[name] = raw == "True"
        elif isinstance(default, int):
            out[name] = int(raw)
        elif isinstance(default, float):
            out[name] = float(raw)
        elif name == "seed":
            out[name] = int(raw)
        else:
            out[name] = raw
    return out
