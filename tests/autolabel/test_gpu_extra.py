"""A worker without the [gpu] extra (the light install) refuses a CLIP / BLIP job: the job fails
with a message naming the extra and how to install it, and no label or failure row is written.
The import labeller and the VLM endpoint need no extra."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from autolabel.labellers import labeller_get
from autolabel.models import AutolabelJob, MachineLabel, MachineLabelFailure
from autolabel.services import autolabel_start, labels_compute
from tests.builders.autolabel import SMALL_GEP, add_images, make_campaign, opened

pytestmark = pytest.mark.django_db


def test_clip_job_is_refused_on_a_worker_without_torch(
        researcher: User, media: Path, monkeypatch: pytest.MonkeyPatch,
        django_capture_on_commit_callbacks: Any) -> None:
    campaign = make_campaign(researcher, autolabel={"labellers": [{"name": "clip", "model": "some/clip"}]},
                             **SMALL_GEP)
    add_images(campaign, "explicit", 3)
    opened(campaign)
    sent: list[tuple[int, int, list[int]]] = []
    monkeypatch.setattr("autolabel.services._publish",
                        lambda job_id, run, batches: sent.extend((job_id, run, b) for b in batches))
    with django_capture_on_commit_callbacks(execute=True):
        autolabel_start(campaign=campaign, labeller="clip")
    assert sent
    monkeypatch.setitem(sys.modules, "torch", None)  # what `import torch` sees on a light worker
    result = labels_compute(job_id=sent[0][0], run=sent[0][1], question_ids=sent[0][2])
    job = AutolabelJob.objects.get(campaign=campaign, labeller="clip")
    assert job.status == "failed" and "refused" in result
    assert "clip labeller needs the [gpu] extra" in job.error and "missing: torch" in job.error
    assert "requirements/gpu-lock.txt" in job.error
    assert not MachineLabel.objects.filter(campaign=campaign).exists()
    assert not MachineLabelFailure.objects.filter(campaign=campaign).exists()


def test_only_the_model_labellers_need_the_extra() -> None:
    assert labeller_get("clip").requires == ("torch", "transformers")
    assert labeller_get("vqa").requires == ("torch", "transformers")
    assert labeller_get("vlm").requires == ()
