"""Uploads imported through the request work budget (`common.budget`): the MTurk batch results, machine
labels and image manifests.

An import's work grows with its upload (up to the 100 MB cap). Before any row is read the endpoint
estimates its seconds from the upload's lines (`upload_estimate`: a byte count of line breaks over the
upload's chunks, and the import's measured cost per row); within `REQUEST_WORK_BUDGET_S` it imports
in the request as before. Above it (`upload_import_request`) the upload is stored in the default
storage (`private/imports/`), a job is recorded in the cache and a worker (`campaigns.upload_import`,
default queue) runs the very same import function (the app's runner registered with
`register_import`: the same write path, validation and all-or-nothing guards) on the stored bytes;
the endpoint answers `202 {"id", "status": "building", "progress", "campaign", "kind"}` and
`GET /api/imports/{id}/` answers the job (`status`: building, done with the import's own `result`
body, or failed with the `error` message and `errors` by field, as the request would have answered
400). The stored upload is removed when the job ends. Progress is 0 until the import is done (the
imports write all or nothing, in one transaction: there is nothing partial to count).

The worker never reads a stored upload whole: each is opened from the default storage (`open()`, a
file on disk or django-storages' spooled remote file) and handed to the runner as a binary stream, which
the parsers read in chunks (the MTurk reader, `common.uploads.upload_rows` for manifests and machine
labels: a UTF-8 check in 1 MB chunks, then the CSV / JSON Lines reader over a text stream; an image zip
through `common.zipsafe`). The size limits of the request (`common.uploads.upload_limit`: 100 MB for a
CSV, the archive's) are checked again on the stored size before it is opened.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, BinaryIO, cast

from django.core.cache import cache
from django.core.files.storage import default_storage
from django.db import transaction
from rest_framework import serializers

from .budget import Estimate, budget_decide
from .errors import ApplicationError
from .tasks import task_send
from .uploads import upload_limit, upload_too_large

# Seconds per uploaded line, rounded up. MTurk batch (10 answers a row) and image manifest (URL rows):
# `bench/imports.py --images 100000 --rows 100000` on a quiet machine (bench/README.md "Today's figures",
# 2026-11-27 16:28 UTC, main 9c74c9a, the import code unchanged since): 100,000 rows in 85.3 s (853 us a
# row, PostgreSQL-bound) and in 7.97 s (80 us). Machine labels: `bench/budget_calibrate.py`, 2026-11-27
# 17:26 and 17:28 UTC, load average 9-12: 4,800 rows (one a question of the GEP paper's design) in
# 0.62-0.86 s CPU of this process and its PostgreSQL backend (130-179 us a row; 2.4-3.0 s wall loaded).
IMPORT_PER_ROW_S = {"mturk_batch": 1.0e-3, "machine_labels": 4.0e-4, "images": 1.5e-4}
IMPORT_FIXED_S = 0.1
TASK = "campaigns.upload_import"
PREFIX = "private/imports"
JOB_TTL_S = 7 * 24 * 3600
Runner = Callable[[dict[str, Any], dict[str, BinaryIO]], dict[str, Any]]
_runners: dict[str, Runner] = {}


def register_import(kind: str, runner: Runner) -> None:
    """`runner(params, files)` runs the import of `kind` on the stored uploads (name -> a binary stream,
    open and at its start; read it in chunks) and returns the body the request would have answered (an
    ApplicationError for a 400)."""
    _runners[kind] = runner


def upload_lines(upload: Any) -> int:
    """The upload's lines (rows, with the header), counted over its chunks without decoding."""
    lines, last = 0, b""
    for chunk in upload.chunks():
        lines += chunk.count(b"\n")
        last = chunk[-1:] or last
    if hasattr(upload, "seek"):
        upload.seek(0)
    return lines + (1 if last and last != b"\n" else 0)


def upload_estimate(upload: Any, *, kind: str) -> Estimate:
    """The import's seconds from the upload's lines (the cap on its size is checked before)."""
    return Estimate(data=IMPORT_FIXED_S + upload_lines(upload) * IMPORT_PER_ROW_S[kind])


def _key(job_id: str) -> str:
    return f"upload-import:{job_id}"


def _public(job: dict[str, Any]) -> dict[str, Any]:
    return {k: job[k] for k in ("id", "status", "progress", "campaign", "kind", "result", "error", "errors") if k in job}


def upload_import_request(*, kind: str, campaign_id: int, owner_id: int, estimate: Estimate,
                          uploads: dict[str, Any], params: dict[str, Any],
                          inline: Callable[[], Any]) -> tuple[str, Any]:
    """("done", what `inline()` returned: the import run in the request) or ("building", the 202 body)."""
    if kind not in _runners:
        raise LookupError(f"no import runner registered for {kind!r}")
    if budget_decide(estimate) == "inline":
        return "done", inline()
    job_id = uuid.uuid4().hex
    files = {name: default_storage.save(f"{PREFIX}/{job_id}-{name}", upload) for name, upload in uploads.items()
             if upload is not None}
    job = {"id": job_id, "status": "building", "progress": 0.0, "campaign": campaign_id, "kind": kind,
           "owner": owner_id, "params": params, "files": files}
    cache.set(_key(job_id), job, timeout=JOB_TTL_S)
    transaction.on_commit(lambda: task_send(TASK, args=[job_id]))
    return "building", _public(job)


def upload_job_get(*, job_id: str, owner_id: int) -> dict[str, Any] | None:
    """The job's public state for its owner; None for anyone else or an unknown (or expired) job."""
    job = cache.get(_key(job_id))
    if not isinstance(job, dict) or job.get("owner") != owner_id:
        return None
    return _public(job)


def _stored_open(name: str, stored: str, opened: ExitStack) -> BinaryIO:
    """The stored upload as a binary stream (closed with `opened`), within the request's size limit
    (413's message, as the request's: a field named `archive` is an archive, image files have their own
    limit in the import, the others are CSV)."""
    kind = "archive" if name == "archive" else None if name.startswith("files.") else "csv"
    if kind is not None and default_storage.size(stored) > upload_limit(kind):
        raise upload_too_large(name, upload_limit(kind))
    return cast(BinaryIO, opened.enter_context(default_storage.open(stored, "rb")))  # a File: read, seek, tell


def upload_import_run(*, job_id: str) -> dict[str, Any] | None:
    """Worker side: read the stored uploads, run the registered import, record its result or its 400,
    remove the stored uploads."""
    job = cache.get(_key(job_id))
    if not isinstance(job, dict) or job.get("status") != "building":
        return None
    try:
        with ExitStack() as opened:
            streams = {name: _stored_open(name, stored, opened) for name, stored in job["files"].items()}
            job.update(status="done", progress=1.0, result=_runners[job["kind"]](job["params"], streams))
    except ApplicationError as exc:
        job.update(status="failed", error=exc.message, errors=exc.errors)
    except Exception as exc:
        job.update(status="failed", error=f"the import failed in the worker: {type(exc).__name__}")
        cache.set(_key(job_id), job, timeout=JOB_TTL_S)
        raise
    finally:
        for stored in job["files"].values():
            default_storage.delete(stored)
    cache.set(_key(job_id), job, timeout=JOB_TTL_S)
    return _public(job)


class UploadImportJobOutput(serializers.Serializer):
    """202 of an import over the request work budget, and `GET /api/campaigns/{id}/imports/?job=`."""

    id = serializers.CharField()
    status = serializers.CharField(help_text='"building", then "done" (with `result`) or "failed" (with `error`).')
    progress = serializers.FloatField(help_text="0-1.")
    campaign = serializers.IntegerField()
    kind = serializers.CharField(help_text="mturk_batch, machine_labels or images")
    result = serializers.DictField(required=False, help_text="the body the request would have answered")
    error = serializers.CharField(required=False)
    errors = serializers.DictField(required=False)
