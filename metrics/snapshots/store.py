"""One claim/build/store for every snapshot: a built report, or a comparison's tests, kept in
`ReportSnapshot` until the data it was built from changes.

- `snapshot_key`: the ONE place that decides what a snapshot is keyed by (so when it is stale): the
  options, and the data version of every campaign it reads (plus a machine labeller's labels for a
  report from that source). Nothing else decides staleness.
- `snapshot_get`: the snapshot of the key, ready (its payload) or building (its progress); else built
  now in the request and stored, or, when the work is large (`background()`), claimed (one row per
  key: a second request finds it building) and built by a worker task after the commit.
- `snapshot_build`: the worker side, idempotent (a ready snapshot is left alone; a failure is recorded
  on the row, then raised for Celery to log).
- `snapshot_store`: the payload stored as ready; older versions of the same key are deleted.
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from campaigns.models import Campaign
from common.tasks import task_send
from metrics.extract import campaign_data_version
from metrics.extract.machine import machine_data_version
from metrics.models import ReportSnapshot
from metrics.options import ReportOptions

Payload = dict[str, Any]


@dataclass(frozen=True)
class SnapshotKey:
    campaign: Campaign  # the row the snapshot hangs on (a comparison's first campaign)
    options_key: str
    data_version: str


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot_key(*, campaigns: list[Campaign], options: ReportOptions, compare_key: str | None = None) -> SnapshotKey:
    """A report (one campaign, `compare_key` None): options key `options.key()`, data version the
    campaign's (`| <the labeller's labels' version>` for a machine source: a 400 naming `source` when the
    labeller has no labels, before any snapshot). A comparison's tests (`compare_key`: the
    `CompareOptions` key): options key `compare:<sha256 of the ids, the report and compare options>`,
    data version the sha256 of every campaign's."""
    if compare_key is None:
        (campaign,) = campaigns
        version = campaign_data_version(campaign)
        if options.labeller:
            version += "|" + machine_data_version(campaign, options.labeller)
        return SnapshotKey(campaign, options.key(), version)
    ids = ",".join(str(c.pk) for c in campaigns)
    return SnapshotKey(campaigns[0], "compare:" + _sha(f"{ids}#{options.key()}#{compare_key}"),
                       _sha("#".join(campaign_data_version(c) for c in campaigns)))


def _building(snapshot_id: int, progress: float) -> Payload:
    return {"status": "building", "progress": progress, "snapshot": snapshot_id}


def snapshot_get(key: SnapshotKey, *, options: ReportOptions, build: Callable[[], Payload],
                 background: Callable[[], bool], task: str, task_args: Callable[[int], list[Any]]) -> tuple[str, Payload]:
    """("ready", payload) or ("building", {"status", "progress", "snapshot"}). `build` computes the
    payload in the request; when `background()` is true a worker runs `task` with `task_args(snapshot
    id)` instead (enqueued on commit)."""
    snap = ReportSnapshot.objects.filter(campaign=key.campaign, options_key=key.options_key,
                                         data_version=key.data_version).first()
    if snap is not None and snap.status == ReportSnapshot.Status.READY:
        return "ready", snap.payload
    if snap is not None and snap.status == ReportSnapshot.Status.BUILDING:
        return "building", _building(snap.pk, snap.progress)
    if background():
        if snap is not None:  # a failed build: try again
            ReportSnapshot.objects.filter(pk=snap.pk, status=ReportSnapshot.Status.FAILED).delete()
        claimed = snapshot_claim(key, options=options)
        if claimed is None:  # another request claimed it meanwhile: read what it left
            return snapshot_get(key, options=options, build=build, background=lambda: False, task=task,
                                task_args=task_args)
        transaction.on_commit(lambda: task_send(task, args=task_args(claimed)))
        return "building", _building(claimed, 0.0)
    started = time.monotonic()
    payload = build()
    snapshot_store(key, options=options, payload=payload, seconds=time.monotonic() - started)
    return "ready", payload


def snapshot_claim(key: SnapshotKey, *, options: ReportOptions) -> int | None:
    """The id of a new building snapshot of the key, or None when one exists already."""
    try:
        with transaction.atomic():
            return ReportSnapshot.objects.create(campaign=key.campaign, options_key=key.options_key,
                                                 options=options.to_dict(), data_version=key.data_version).pk
    except IntegrityError:
        return None


def snapshot_store(key: SnapshotKey, *, options: ReportOptions, payload: Payload, seconds: float) -> None:
    ReportSnapshot.objects.update_or_create(
        campaign=key.campaign, options_key=key.options_key, data_version=key.data_version,
        defaults={"status": ReportSnapshot.Status.READY, "payload": payload, "progress": 1.0,
                  "build_seconds": seconds, "options": options.to_dict()})
    # Older snapshots of this campaign and options are stale: keep the table small.
    ReportSnapshot.objects.filter(campaign=key.campaign, options_key=key.options_key).exclude(
        data_version=key.data_version).delete()


def snapshot_build(*, snapshot_id: int, build: Callable[[ReportSnapshot], Payload]) -> None:
    """Worker side: build the claimed snapshot (from what its row holds: campaign, stored options)."""
    snap = ReportSnapshot.objects.select_related("campaign").filter(pk=snapshot_id).first()
    if snap is None or snap.status == ReportSnapshot.Status.READY:
        return
    started = time.monotonic()
    try:
        ReportSnapshot.objects.filter(pk=snap.pk).update(progress=0.1)
        payload = build(snap)
    except Exception as exc:  # record, then let Celery log it
        ReportSnapshot.objects.filter(pk=snap.pk).update(status=ReportSnapshot.Status.FAILED, error=str(exc)[:2000])
        raise
    ReportSnapshot.objects.filter(pk=snap.pk).update(status=ReportSnapshot.Status.READY, payload=payload, progress=1.0,
                                                     build_seconds=time.monotonic() - started)
