"""The campaign archive (`annotation.archive.campaign_export`) through the request work budget.

`GET /api/campaigns/{id}/export/` and the archive stored when a campaign is deleted read every row of
the campaign (prompts, images, questions, annotators, answers, qualifications, examples): their work
grows with the data. Before any work the request counts those rows (`archive_state`: one query) and
estimates the build's seconds (`archive_estimate`, per-row costs measured by `bench/archive_export.py`):

- within `REQUEST_WORK_BUDGET_S` the archive is built in the request, as before;
- above it a worker (`annotation.campaign_archive_build`, default queue) builds it with progress and
  stores it under `private/archives/`, keyed by the archive revision; the request answers
  `202 {"id", "status": "building", "progress"}` until the stored archive of the current revision
  exists, then serves it (200, the same zip). One claim per campaign in the cache (as opening) keeps
  a second request from queueing a second build.

Staleness: the archive holds more than the report's data revision (`data_revision`) covers (the
question counters do not matter, but new enrollments and consents, qualification tests and attempts,
prompts and image rows do), so the stored archive is keyed by `archive_revision`: the data revision
plus, per table, its row count and (PostgreSQL) the sum of its rows' `xmin`, which moves with every
insert, update or delete of a row whatever code wrote it. Questions are the exception (their
`assigned` / `completed` counters move with every HIT, and are not in the archive): their count,
highest id and summed `required`; every other write of a question is a rarer writer that moves the
data revision (gold, opening, `required`). The portable twin (SQLite) uses each table's count and
highest id. A stored archive of another revision is never served.

Deletion (`campaign_delete_archive`, registered with `campaigns.registry`): within the budget the archive is
built and stored in the delete request, as before. Above it the delete is refused with a 409 unless
the stored archive of the current revision exists (then it is copied to `archives/` and the campaign
soft-deleted): the 409 starts that build and says to delete again when `GET .../export/` answers 200.
The campaign is never hidden before its archive exists (a lost worker cannot leave a deleted campaign
without an archive).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.utils import timezone

from campaigns.models import Campaign, Prompt
from common.budget import Estimate, budget_decide, worker_max_s
from common.errors import ConflictError
from common.tasks import task_send
from generation.models import Image

from ..models import Answer, Enrollment, ExampleImage, Qualification, QualificationAttempt, QualificationItem, Question

# Seconds per archived row (ORM rows to JSON Lines, deflate), rounded up from bench/archive_export.py
# (bench/README.md, "Campaign archive"), and the fixed part (the queries of an empty campaign).
ARCHIVE_FIXED_S = 0.05
ARCHIVE_PER_ROW_S = {"answers": 4.0e-5, "questions": 5.0e-5, "images": 6.0e-5, "prompts": 3.0e-5,
                     "enrollments": 5.0e-5, "attempts": 1.0e-4, "items": 5.0e-5, "examples": 5.0e-5}
TASK = "annotation.campaign_archive_build"
PREFIX = "private/archives"


@dataclass(frozen=True)
class ArchiveState:
    """The campaign's archived rows per table (the estimate's input) and its archive revision (the
    stored archive's key), read together in one query before any work."""

    counts: dict[str, int]
    revision: str


def _tables() -> dict[str, tuple[str, str]]:
    """name -> (table, the condition that selects the campaign's rows; %(c)s is the campaign id)."""
    q = Qualification._meta.db_table
    return {
        "prompts": (Prompt._meta.db_table, "campaign_id = %(c)s"),
        "images": (Image._meta.db_table, "campaign_id = %(c)s"),
        "enrollments": (Enrollment._meta.db_table, "campaign_id = %(c)s"),
        "qualifications": (q, "campaign_id = %(c)s"),
        "items": (QualificationItem._meta.db_table, f"qualification_id IN (SELECT id FROM {q} WHERE campaign_id = %(c)s)"),
        "attempts": (QualificationAttempt._meta.db_table,
                     f"qualification_id IN (SELECT id FROM {q} WHERE campaign_id = %(c)s)"),
        "examples": (ExampleImage._meta.db_table, "campaign_id = %(c)s"),
    }


def archive_state(campaign: Campaign) -> ArchiveState:
    """Row counts and the archive revision (see the module docstring), in one query."""
    pg = connection.vendor == "postgresql"
    stamp = "COALESCE(SUM(xmin::text::bigint), 0)" if pg else "COALESCE(MAX(id), 0)"
    own = "xmin::text" if pg else "updated_at"
    parts = [f"(SELECT data_changes || '.' || {own} FROM {Campaign._meta.db_table} WHERE id = %(c)s)",
             f"(SELECT COUNT(*) || '.' || COALESCE(MAX(id), 0) FROM {Answer._meta.db_table} WHERE campaign_id = %(c)s)",
             f"(SELECT COUNT(*) || '.' || COALESCE(MAX(id), 0) || '.' || COALESCE(SUM(required), 0) "
             f"FROM {Question._meta.db_table} WHERE campaign_id = %(c)s)"]
    names = list(_tables())
    parts += [f"(SELECT COUNT(*) || '.' || {stamp} FROM {table} WHERE {where})" for table, where in _tables().values()]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), {"c": campaign.pk})
        row = [str(v) for v in cursor.fetchone()]
    counts = {"answers": int(row[1].split(".")[0]), "questions": int(row[2].split(".")[0])}
    counts.update({name: int(value.split(".")[0]) for name, value in zip(names, row[3:], strict=True)})
    return ArchiveState(counts=counts, revision="|".join(row))


def archive_estimate(state: ArchiveState) -> Estimate:
    """The archive's seconds from its row counts. No options."""
    return Estimate(data=ARCHIVE_FIXED_S + sum(state.counts.get(name, 0) * cost
                                               for name, cost in ARCHIVE_PER_ROW_S.items()))


def _stored_name(campaign: Campaign, revision: str) -> str:
    digest = hashlib.sha256(revision.encode()).hexdigest()[:24]
    return f"{PREFIX}/campaign-{campaign.pk}-{digest}.zip"


def _claim_key(campaign: Campaign) -> str:
    return f"campaign-archive:{campaign.pk}:{campaign.created_at.timestamp():.6f}"


def archive_progress(campaign: Campaign) -> float | None:
    """The worker's progress (0-1) while it builds the campaign's archive; None when none does."""
    value = cache.get(_claim_key(campaign))
    return None if value is None else float(value)


def _building(campaign: Campaign, progress: float) -> dict[str, Any]:
    return {"id": campaign.pk, "status": "building", "progress": round(progress, 3)}


def _queue(campaign: Campaign, *, on_commit: bool = True) -> dict[str, Any]:
    """Claim the campaign's build and send the task (or read the running build's progress)."""
    running = archive_progress(campaign)
    if running is not None or not cache.add(_claim_key(campaign), 0.0, timeout=int(2 * worker_max_s()) + 60):
        return _building(campaign, archive_progress(campaign) or 0.0)
    campaign_id = campaign.pk
    if on_commit:
        transaction.on_commit(lambda: task_send(TASK, args=[campaign_id]))
    else:  # the caller's transaction is about to roll back (the delete's 409): send now
        task_send(TASK, args=[campaign_id])
    return _building(campaign, 0.0)


def campaign_archive_request(*, campaign: Campaign) -> tuple[str, Any]:
    """("bytes", zip bytes) built in the request, ("stored", storage name) of the current revision, or
    ("building", {"id", "status": "building", "progress"}) while a worker builds it (the API's 202)."""
    from ..archive import campaign_export

    state = archive_state(campaign)
    if budget_decide(archive_estimate(state)) == "inline":
        return "bytes", campaign_export(campaign=campaign)
    name = _stored_name(campaign, state.revision)
    if default_storage.exists(name):
        return "stored", name
    return "building", _queue(campaign)


def campaign_archive_run(*, campaign_id: int) -> str | None:
    """Worker side: read the revision, build the archive (progress where requests read it), store it
    under that revision's name and remove the campaign's older stored archives; the claim is released
    when done or failed."""
    from ..archive import campaign_export

    campaign = Campaign.objects.filter(pk=campaign_id).first()  # a soft-deleted campaign is still archived
    if campaign is None:
        return None
    key = _claim_key(campaign)

    def progress(fraction: float) -> None:
        cache.set(key, min(0.99, max(0.0, fraction)), timeout=int(2 * worker_max_s()) + 60)

    try:
        # The revision is read before the rows: a write in between makes the next request's revision
        # differ (a rebuild), never an older archive under a newer revision.
        name = _stored_name(campaign, archive_state(campaign).revision)
        if not default_storage.exists(name):
            default_storage.save(name, ContentFile(campaign_export(campaign=campaign, progress=progress)))
        prefix = f"campaign-{campaign.pk}-"
        try:
            _, files = default_storage.listdir(PREFIX)
        except FileNotFoundError:
            files = []
        for old in files:
            if old.startswith(prefix) and f"{PREFIX}/{old}" != name:
                default_storage.delete(f"{PREFIX}/{old}")
        return name
    finally:
        cache.delete(key)


def campaign_delete_archive(campaign: Campaign) -> str:
    """The archive stored before a campaign is soft-deleted (registered with campaigns.registry; runs
    in the delete's transaction). Over the budget: the stored archive of the current revision, copied,
    or a 409 that starts its build (see the module docstring)."""
    from ..archive import campaign_export

    state = archive_state(campaign)
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S%f")
    target = f"archives/campaign-{campaign.pk}-{stamp}.zip"
    if budget_decide(archive_estimate(state)) == "inline":
        return default_storage.save(target, ContentFile(campaign_export(campaign=campaign)))
    name = _stored_name(campaign, state.revision)
    if default_storage.exists(name):
        with default_storage.open(name, "rb") as handle:
            return default_storage.save(target, handle)
    building = _queue(campaign, on_commit=False)
    raise ConflictError(
        "The campaign's archive is too large to build in this request, and deleting stores it first: it is "
        f"being built now (progress {building['progress']:.0%}). Delete again when "
        f"GET /api/campaigns/{campaign.pk}/export/ answers 200 (the campaign is not deleted).",
        errors={"archive": ["building"]})
