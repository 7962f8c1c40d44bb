"""The replication package's build: a Celery task with progress, the zip streamed to storage, kept
until the data it was built from changes (`PackageBuild`).

`GET /api/campaigns/{id}/export/dataset/` asks `package_get`: the zip of the current data when it is
ready; otherwise a build is claimed (one per campaign and data version: concurrent requests share
it) and the API answers 202 `{"status": "building", "progress": 0..1, "build": id}` until it is.
A campaign whose estimated build fits the request work budget (`common.budget`, setting
`REQUEST_WORK_BUDGET_S`; `metrics.snapshots.budget.package_estimate`, from its answers) is built in the
request instead, decided before any work starts. The worker writes the zip to a temporary file, then streams
it to the default storage under `private/packages/` (never a media URL: the API reads it back for
the owner only) and removes the older builds of the campaign.
"""
from __future__ import annotations

import tempfile
import time
from typing import Any

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction

from campaigns.models import Campaign
from common.budget import budget_decide
from common.tasks import task_send
from metrics.models import PackageBuild
from metrics.snapshots.budget import package_estimate
from metrics.snapshots.key import snapshot_key

from .dataset import dataset_write

PREFIX = "private/packages"


def package_data_version(campaign: Campaign) -> str:
    """The package's key: the campaign's data revision (`metrics.snapshots.key.snapshot_key`). Machine
    labels, their failures, the human sample and the CLIPScores move it too (their writers go through
    `annotation.services.derived`), so nothing else decides whether a built package is stale."""
    return snapshot_key(campaigns=[campaign], options_key="package").data_version


def _claim(campaign: Campaign, version: str) -> PackageBuild | None:
    try:
        with transaction.atomic():
            return PackageBuild.objects.create(campaign=campaign, data_version=version)
    except IntegrityError:
        return None


def package_get(*, campaign: Campaign) -> tuple[str, PackageBuild]:
    """("ready", build) with its zip in storage, or ("building", build) while a worker builds it."""
    version = package_data_version(campaign)
    build = PackageBuild.objects.filter(campaign=campaign, data_version=version).first()
    if build is not None and build.status == PackageBuild.Status.READY and default_storage.exists(build.file):
        return "ready", build
    if build is not None and build.status == PackageBuild.Status.BUILDING:
        return "building", build
    if build is not None:  # failed, or its file is gone: build again
        PackageBuild.objects.filter(pk=build.pk).delete()
    build = _claim(campaign, version)
    if build is None:  # another request claimed it a moment ago
        return package_get(campaign=campaign)
    if budget_decide(package_estimate(campaign)) == "inline":
        package_build_run(build_id=build.pk)
        build.refresh_from_db()
        return ("ready" if build.status == PackageBuild.Status.READY else "building"), build
    build_id = build.pk
    transaction.on_commit(lambda: task_send("metrics.package_build", args=[build_id]))
    return "building", build


def package_progress(build: PackageBuild) -> dict[str, Any]:
    """The 202 body."""
    return {"status": build.status, "progress": round(float(build.progress), 3), "build": build.pk,
            "error": build.error or None}


def package_build_run(*, build_id: int) -> None:
    """Worker side (idempotent: a ready build is left alone). Progress is written as the steps pass."""
    build = PackageBuild.objects.select_related("campaign").filter(pk=build_id).first()
    if build is None or build.status == PackageBuild.Status.READY:
        return
    started = time.monotonic()

    def progress(fraction: float) -> None:
        PackageBuild.objects.filter(pk=build_id).update(progress=min(0.95, 0.05 + 0.9 * fraction))

    try:
        with tempfile.TemporaryFile(prefix=f"campaign-{build.campaign_id}-package-") as handle:
            summary = dataset_write(campaign=build.campaign, out=handle, progress=progress)
            size = handle.tell()
            handle.seek(0)
            name = default_storage.save(f"{PREFIX}/campaign-{build.campaign_id}-{build.pk}.zip", File(handle))
    except Exception as exc:
        PackageBuild.objects.filter(pk=build_id).update(status=PackageBuild.Status.FAILED, error=str(exc)[:2000])
        raise
    PackageBuild.objects.filter(pk=build_id).update(status=PackageBuild.Status.READY, progress=1.0, file=name,
                                                    size=size, summary=summary,
                                                    build_seconds=time.monotonic() - started)
    for old in PackageBuild.objects.filter(campaign_id=build.campaign_id).exclude(pk=build_id):
        if old.file:
            default_storage.delete(old.file)
        old.delete()
