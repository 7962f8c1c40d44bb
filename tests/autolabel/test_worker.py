"""Labelling through a real Celery worker process on the Redis broker (the `generation` queue), and
a SIGKILLed worker whose messages are redelivered without duplicate labels."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from autolabel.models import AutolabelJob, ImageEmbedding, MachineLabel
from autolabel.services import autolabel_cancel, autolabel_start
from campaigns.models import Campaign
from tests.builders.autolabel import SMALL_GEP, add_images, make_campaign, opened
from tests.builders.workers import Worker, broker_reset, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def workers(media: Path) -> Iterator[list[Worker]]:
    broker_reset()
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()
    broker_reset()


def _campaign(owner: User, tiny_clip: Path, name: str, images: int = 6) -> Campaign:
    labellers = [{"name": "clip_cls", "model": str(tiny_clip)}, {"name": "clip", "model": str(tiny_clip)}]
    campaign = make_campaign(owner, name=name, autolabel={"labellers": labellers}, **SMALL_GEP)
    add_images(campaign, "explicit", images)
    return opened(campaign)


def _job(campaign: Campaign, labeller: str) -> AutolabelJob:
    return AutolabelJob.objects.get(campaign=campaign, labeller=labeller)


def test_autolabel_end_to_end_through_a_worker(workers: list[Worker], tmp_path: Path, researcher: User,
                                               tiny_clip: Path, settings) -> None:
    campaign = _campaign(researcher, tiny_clip, "e2e")
    worker = Worker(tmp_path)
    workers.append(worker)
    worker.wait_ready()
    result = autolabel_start(campaign=campaign, labeller="clip_cls")   # autocommit: published at once
    assert result["queued"] == 6 and result["status"] == "running"
    wait_for(lambda: _job(campaign, "clip_cls").status == "done", timeout=120, what="clip_cls", worker=worker)
    job = _job(campaign, "clip_cls")
    assert (job.done, job.total, job.failed, job.embeddings_computed) == (6, 6, 0, 6)
    assert MachineLabel.objects.filter(campaign=campaign, labeller="clip_cls").count() == 6
    # A second labeller reuses the cached embeddings: none computed again.
    autolabel_start(campaign=campaign, labeller="clip")
    wait_for(lambda: _job(campaign, "clip").status == "done", timeout=120, what="clip", worker=worker)
    job = _job(campaign, "clip")
    assert (job.done, job.embeddings_computed, job.embeddings_cached) == (6, 0, 6)
    assert ImageEmbedding.objects.count() == 6
    assert "autolabel.labels_compute" in worker.text()


def test_a_killed_worker_redelivers_without_duplicate_labels(workers: list[Worker], tmp_path: Path,
                                                             researcher: User, tiny_clip: Path, settings) -> None:
    campaign = _campaign(researcher, tiny_clip, "killed", images=12)
    settings.AUTOLABEL_TASK_QUESTIONS = 6   # two messages of six questions
    env = {"CELERY_VISIBILITY_TIMEOUT": "3", "CELERY_UNACKED_RESTORE_INTERVAL": "1",
           "CELERY_UNACKED_RESTORE_THROTTLE": "1"}
    first = Worker(tmp_path, env=env)
    workers.append(first)
    first.wait_ready()
    autolabel_start(campaign=campaign, labeller="clip_cls")
    # Kill while the first message is in flight (its model is loading: seconds on CPU).
    wait_for(lambda: "labels_compute[" in first.text() and " received" in first.text(), timeout=60,
             what="a message in flight", worker=first)
    first.kill()
    in_flight = first.text().split("labels_compute[", 1)[1].split("]", 1)[0]
    assert MachineLabel.objects.filter(campaign=campaign).count() < 12, "the run finished before the kill"
    second = Worker(tmp_path, env=env)
    workers.append(second)
    second.wait_ready()
    wait_for(lambda: _job(campaign, "clip_cls").status == "done", timeout=180, what="redelivery", worker=second)
    labels = MachineLabel.objects.filter(campaign=campaign, labeller="clip_cls")
    assert labels.count() == 12 and labels.values("question").distinct().count() == 12
    assert _job(campaign, "clip_cls").done == 12
    assert in_flight in second.text()   # the killed worker's message came back to the second one


def test_cancel_stops_queued_batches_and_a_restart_resumes(workers: list[Worker], tmp_path: Path,
                                                           researcher: User, tiny_clip: Path, settings) -> None:
    campaign = _campaign(researcher, tiny_clip, "cancel", images=12)
    settings.AUTOLABEL_TASK_QUESTIONS = 1
    autolabel_start(campaign=campaign, labeller="clip")   # no worker yet: 12 messages wait
    assert autolabel_cancel(campaign=campaign, labeller="clip")["status"] == "cancelled"
    worker = Worker(tmp_path)
    workers.append(worker)
    worker.wait_ready()
    wait_for(lambda: worker.text().count("succeeded") >= 12, timeout=120, what="the stale messages", worker=worker)
    assert MachineLabel.objects.filter(campaign=campaign).count() == 0   # cancelled: they did nothing
    result = autolabel_start(campaign=campaign, labeller="clip")
    assert result["queued"] == 12 and _job(campaign, "clip").run == 2
    wait_for(lambda: _job(campaign, "clip").status == "done", timeout=120, what="resume", worker=worker)
    assert MachineLabel.objects.filter(campaign=campaign).count() == 12
    time.sleep(0.1)
