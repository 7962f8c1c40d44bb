"""Celery tasks: thin, ids in, idempotent (see services.labels_compute). On the `generation` queue
(GPU hosts, CELERY_TASK_ROUTES); published by name from the services."""
from __future__ import annotations

from typing import Any

from celery import shared_task

from .services import labels_compute


@shared_task(name="autolabel.labels_compute", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def labels_compute_task(job_id: int, run: int, question_ids: list[int]) -> dict[str, Any]:
    """Label one batch of questions; a redelivered message labels only what is still missing."""
    return labels_compute(job_id=job_id, run=run, question_ids=question_ids)
