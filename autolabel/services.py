"""Writes of machine labelling: start / cancel a labeller run over a campaign, and compute one batch
of labels (called by the Celery task). Keyword-only, transactional.

Idempotence: a label is unique per (question, labeller) and a batch only computes the questions that
have none yet, so a redelivered message (worker killed, acks_late) or a second run never duplicates
a label; `AutolabelJob.run` is bumped by every (re)start, and a message of an older run, or of a
cancelled job, does nothing. Progress counters are recounted from the stored rows."""
from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q

from annotation.models import Question
from annotation.services.derived import revision_bump
from campaigns.models import Campaign
from campaigns.spec import Problems
from campaigns.spec.autolabel import OPTIONS, labeller_config
from common.errors import ApplicationError, ConflictError
from common.extras import gpu_extra_message, gpu_extra_missing
from common.tasks import task_send

from .labellers import LabelContext, labeller_get, labeller_names
from .models import AutolabelJob, MachineLabel, MachineLabelFailure
from .selectors import job_counts

logger = logging.getLogger(__name__)
TASK_NAME = "autolabel.labels_compute"
QUEUE = "generation"
J = AutolabelJob.Status


def labeller_config_for(*, campaign: Campaign, labeller: str) -> dict[str, Any]:
    """The labeller's options: the spec's `autolabel.labellers` entry, else its defaults."""
    if labeller not in OPTIONS or labeller_get(labeller) is None:
        raise ApplicationError(f"Unknown labeller {labeller!r}.",
                               errors={"labeller": [f"unknown labeller (runnable: {', '.join(labeller_names())})"]})
    for entry in ((campaign.spec or {}).get("autolabel") or {}).get("labellers", []):
        if entry.get("name") == labeller:
            return dict(entry)
    p = Problems()
    cfg = labeller_config({"name": labeller}, "labeller", p)
    if cfg is None:
        raise ApplicationError(f"The {labeller} labeller needs options: list it in the spec's autolabel.labellers.",
                               errors={"labeller": [f"{path}: {', '.join(m)}" for path, m in p.errors.items()]})
    return cfg


def _applicable(campaign: Campaign, labeller: str) -> Any:
    lab = labeller_get(labeller)
    assert lab is not None
    q = Q()
    for family in lab.families:
        q |= Q(family=family) | Q(family__startswith=f"{family}:")
    return Question.objects.filter(q, campaign=campaign, is_gold=False, image__excluded=False)


def autolabel_start(*, campaign: Campaign, labeller: str) -> dict[str, Any]:
    """Start (or resume) a labeller over the campaign's questions; idempotent: while a run is going
    nothing more is queued; after it (done, cancelled, failed) only questions without a label are.
    The batches are handed to the broker after the commit."""
    config = labeller_config_for(campaign=campaign, labeller=labeller)
    if not Question.objects.filter(campaign=campaign).exists():
        raise ConflictError("The campaign has no questions yet: open it for annotation first (POST .../open/).",
                            errors={"campaign": ["has no questions (open it first)"]})
    with transaction.atomic():
        job, created = AutolabelJob.objects.select_for_update().get_or_create(
            campaign=campaign, labeller=labeller, defaults={"config": config})
        applicable = _applicable(campaign, labeller)
        total = applicable.count()
        if not created and job.status == J.RUNNING and job.config == config:
            counts = job_counts(job=job)
            return {"labeller": labeller, "status": job.status, "queued": 0, "batches": 0, "total": job.total,
                    **counts}
        missing = list(applicable.filter(~Exists(MachineLabel.objects.filter(question=OuterRef("pk"),
                                                                             labeller=labeller)))
                       .order_by("image_id", "pk").values_list("pk", flat=True))
        job.run = job.run + (0 if created else 1)
        job.config, job.total, job.error = config, total, ""
        job.status = J.RUNNING if missing else J.DONE
        job.save()
        counts = job_counts(job=job)
        AutolabelJob.objects.filter(pk=job.pk).update(**counts)
        size = max(1, int(settings.AUTOLABEL_TASK_QUESTIONS))
        batches = [missing[i:i + size] for i in range(0, len(missing), size)]
        job_id, run = job.pk, job.run
        transaction.on_commit(lambda: _publish(job_id, run, batches))
    return {"labeller": labeller, "status": job.status, "queued": len(missing), "batches": len(batches),
            "total": total, **counts}


def _publish(job_id: int, run: int, batches: list[list[int]]) -> None:
    for batch in batches:
        try:
            task_send(TASK_NAME, args=[job_id, run, batch], queue=QUEUE)
        except Exception as exc:  # the broker's connection errors: the job shows it; POST again resumes
            logger.warning("autolabel job %s: the broker refused a batch (%s)", job_id, type(exc).__name__)
            AutolabelJob.objects.filter(pk=job_id).update(status=J.FAILED, error=f"broker unavailable: {exc}"[:1000])
            return


@transaction.atomic
def autolabel_cancel(*, campaign: Campaign, labeller: str) -> dict[str, Any]:
    """Running -> cancelled: queued messages do nothing; POST autolabel again resumes."""
    job = AutolabelJob.objects.select_for_update().filter(campaign=campaign, labeller=labeller).first()
    if job is None:
        raise ApplicationError(f"{labeller} has not been run on this campaign.",
                               errors={"labeller": ["has no run on this campaign"]})
    if job.status == J.RUNNING:
        job.status = J.CANCELLED
        job.save(update_fields=["status", "updated_at"])
    return {"labeller": labeller, "status": job.status, **job_counts(job=job), "total": job.total}


def labels_compute(*, job_id: int, run: int, question_ids: list[int]) -> dict[str, Any]:
    """Label the questions of one batch that have no label from this labeller yet (see the module
    docstring for why this is safe to run twice). Returns {"labelled", "failed"} or {"skipped"}."""
    job = AutolabelJob.objects.select_related("campaign").filter(pk=job_id).first()
    if job is None or job.status != J.RUNNING or job.run != run:
        return {"skipped": "job gone, cancelled, finished or superseded"}
    labeller = labeller_get(job.labeller)
    assert labeller is not None
    missing = gpu_extra_missing(labeller.requires)
    if missing:  # a light worker: the job stops with the reason (POST again on a GPU worker resumes it)
        error = gpu_extra_message(what=f"The {job.labeller} labeller", missing=missing)
        AutolabelJob.objects.filter(pk=job_id, status=J.RUNNING, run=run).update(status=J.FAILED, error=error)
        return {"refused": error}
    questions = list(Question.objects.filter(pk__in=question_ids)
                     .exclude(machine_labels__labeller=job.labeller)
                     .select_related("image", "image__prompt").order_by("image_id", "pk"))
    if not questions:
        _job_refresh(job_id=job_id, stats={})
        return {"labelled": 0, "failed": 0}
    ctx = LabelContext(campaign=job.campaign, config=job.config)
    try:
        results = labeller.run(ctx, questions)
    except Exception as exc:  # model load, CUDA, ... : the batch fails, the job records why
        logger.exception("autolabel job %s: batch failed", job_id)
        error = f"{type(exc).__name__}: {exc}"[:1000]
        from .labellers.base import LabelResult

        results = [LabelResult(q.pk, error=error) for q in questions]
        AutolabelJob.objects.filter(pk=job_id).update(error=error)
    prov = ctx.provenance or {}
    ok = [r for r in results if r.choice is not None]
    bad = [r for r in results if r.choice is None]
    with transaction.atomic():
        MachineLabel.objects.bulk_create([
            MachineLabel(campaign_id=job.campaign_id, question_id=r.question_id, labeller=job.labeller,
                         choice=r.choice or "", score=r.score, model=str(prov.get("model", ""))[:300],
                         revision=str(prov.get("revision", ""))[:100], params={**prov.get("params", {}), **r.extra})
            for r in ok], ignore_conflicts=True)
        MachineLabelFailure.objects.filter(labeller=job.labeller, question_id__in=[r.question_id for r in ok]).delete()
        MachineLabelFailure.objects.bulk_create([
            MachineLabelFailure(campaign_id=job.campaign_id, question_id=r.question_id, labeller=job.labeller,
                                error=r.error[:1000]) for r in bad],
            update_conflicts=True, unique_fields=["question", "labeller"], update_fields=["error"])
        # Machine and hybrid reports read these labels (and the CLIPScores the run stored before).
        revision_bump(campaign_ids=[job.campaign_id])
    _job_refresh(job_id=job_id, stats=ctx.stats)
    return {"labelled": len(ok), "failed": len(bad)}


@transaction.atomic
def _job_refresh(*, job_id: int, stats: dict[str, int]) -> None:
    job = AutolabelJob.objects.select_for_update().get(pk=job_id)
    counts = job_counts(job=job)
    updates: dict[str, Any] = dict(counts)
    if stats.get("embeddings_computed"):
        updates["embeddings_computed"] = F("embeddings_computed") + stats["embeddings_computed"]
    if stats.get("embeddings_cached"):
        updates["embeddings_cached"] = F("embeddings_cached") + stats["embeddings_cached"]
    if job.status == J.RUNNING and counts["done"] + counts["failed"] >= job.total:
        updates["status"] = J.DONE
    AutolabelJob.objects.filter(pk=job_id).update(**updates)


