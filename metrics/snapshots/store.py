"""One claim/build/store for every snapshot: a built report, or a comparison's tests, kept in
`ReportSnapshot` until the data it was built from changes.

- The key (`metrics.snapshots.key.snapshot_key`: each campaign's data revision and the options) is
  computed by the caller; the snapshot hangs on `owner` (a comparison's first campaign).
- `snapshot_get`: the snapshot of the key, ready (its payload) or building (its progress); else built
  now in the request and stored, or, when the work is large (`background()`), claimed (one row per
  key: a second request finds it building) and built by a worker task after the commit.
- `snapshot_build`: the worker side, idempotent (a ready snapshot is left alone; a failure is recorded
  on the row, then raised for Celery to log).
- `snapshot_store`: the payload stored as ready; older versions of the same key are deleted.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from django.db import IntegrityError, transaction

from campaigns.models import Campaign
from common.tasks import task_send
from metrics.models import ReportSnapshot
from metrics.options import ReportOptions

from .key import SnapshotKey

Payload = dict[str, Any]


def _building(snapshot_id: int, progress: float) -> Payload:
    return {"status": "building", "progress": progress, "snapshot": snapshot_id}


def snapshot_get(owner: Campaign, key: SnapshotKey, *, options: ReportOptions, build: Callable[[], Payload],
                 background: Callable[[], bool], task: str, task_args: Callable[[int], list[Any]]) -> tuple[str, Payload]:
    """("ready", payload) or ("building", {"status", "progress", "snapshot"}). `build` computes the
    payload in the request; when `background()` is true a worker runs `task` with `task_args(snapshot
    id)` instead (enqueued on commit)."""
    snap = ReportSnapshot.objects.filter(campaign=owner, options_key=key.options_key,
                                         data_version=key.data_version).first()
    if snap is not None and snap.status == ReportSnapshot.Status.READY:
        return "ready", cast(Payload, snap.payload)  # a ready snapshot always holds its payload
    if snap is not None and snap.status == ReportSnapshot.Status.BUILDING:
        return "building", _building(snap.pk, snap.progress)
    if background():
        if snap is not None:  # a failed build: try again
            ReportSnapshot.objects.filter(pk=snap.pk, status=ReportSnapshot.Status.FAILED).delete()
        claimed = snapshot_claim(owner, key, options=options)
        if claimed is None:  # another request claimed it meanwhile: read what it left
            return snapshot_get(owner, key, options=options, build=build, background=lambda: False, task=task,
                                task_args=task_args)
        transaction.on_commit(lambda: _snapshot_task_send(task, task_args(claimed)))
        return "building", _building(claimed, 0.0)
    started = time.monotonic()
    payload = build()
    snapshot_store(owner, key, options=options, payload=payload, seconds=time.monotonic() - started)
    return "ready", payload


# The tasks that build snapshots in the background: sent by these names only, so the enqueue check
# (tests/contracts/test_task_names.py) sees every name this module can send.
REPORT_TASK = "metrics.report_build"
COMPARE_TASK = "metrics.compare_build"


def _snapshot_task_send(task: str, args: list[Any]) -> None:
    if task == REPORT_TASK:
        task_send(REPORT_TASK, args=args)
    elif task == COMPARE_TASK:
        task_send(COMPARE_TASK, args=args)
    else:
        raise ValueError(f"not a snapshot task: {task!r}")


def snapshot_claim(owner: Campaign, key: SnapshotKey, *, options: ReportOptions) -> int | None:
    """The id of a new building snapshot of the key, or None when one exists already."""
    try:
        with transaction.atomic():
            return ReportSnapshot.objects.create(campaign=owner, options_key=key.options_key,
                                                 options=options.to_dict(), data_version=key.data_version).pk
    except IntegrityError:
        return None


def snapshot_store(owner: Campaign, key: SnapshotKey, *, options: ReportOptions, payload: Payload, seconds: float) -> None:
    ReportSnapshot.objects.update_or_create(
        campaign=owner, options_key=key.options_key, data_version=key.data_version,
        defaults={"status": ReportSnapshot.Status.READY, "payload": payload, "progress": 1.0,
                  "build_seconds": seconds, "options": options.to_dict()})
    # Older snapshots of this campaign and options are stale: keep the table small.
    ReportSnapshot.objects.filter(campaign=owner, options_key=key.options_key).exclude(
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
