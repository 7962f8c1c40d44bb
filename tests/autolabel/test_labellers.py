"""The CLIP labellers through the same services the worker runs (called in-process here; the worker
tests run them through Celery): labels, scores, provenance, the embedding cache, GEP_CLS."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from sklearn.metrics import roc_auc_score

from annotation.models import Question
from autolabel.labellers.clip import cls_predict, cls_sentences, cls_train, cls_training_record
from autolabel.models import AutolabelJob, ImageClipScore, ImageEmbedding, MachineLabel
from autolabel.selectors import clipscore_rows, machine_label_arrays
from autolabel.services import autolabel_start, labels_compute
from campaigns.models import Campaign
from tests.builders.autolabel import SMALL_GEP, add_images, make_campaign, opened

pytestmark = pytest.mark.django_db


@pytest.fixture
def run_labeller(monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any) -> Any:
    """Start a run, then compute its published batches in-process, in order (what the worker does)."""
    def run(campaign: Campaign, labeller: str) -> AutolabelJob:
        sent: list[tuple[int, int, list[int]]] = []
        monkeypatch.setattr("autolabel.services._publish", lambda job_id, run, batches: sent.extend(
            (job_id, run, b) for b in batches))
        with django_capture_on_commit_callbacks(execute=True):
            autolabel_start(campaign=campaign, labeller=labeller)
        for job_id, run_no, batch in sent:
            labels_compute(job_id=job_id, run=run_no, question_ids=batch)
        return AutolabelJob.objects.get(campaign=campaign, labeller=labeller)
    return run


@pytest.fixture
def clip_campaign(researcher: User, media: Path, tiny_clip: Path) -> Campaign:
    labellers = [{"name": n, "model": str(tiny_clip)} for n in ("clip", "clip_cc", "clip_cls")]
    campaign = make_campaign(researcher, autolabel={"labellers": labellers}, **SMALL_GEP)
    add_images(campaign, "explicit", 6)
    return opened(campaign)


def test_clip_labellers_label_every_question_once_and_share_embeddings(
        clip_campaign: Campaign, run_labeller: Any) -> None:
    job = run_labeller(clip_campaign, "clip")
    questions = Question.objects.filter(campaign=clip_campaign).count()
    assert questions == 6 and job.status == "done" and (job.done, job.total, job.failed) == (6, 6, 0)
    assert job.embeddings_computed == 6 and job.embeddings_cached == 0
    assert ImageEmbedding.objects.count() == 6
    before = dict(ImageEmbedding.objects.values_list("pk", "created_at"))
    cc = run_labeller(clip_campaign, "clip_cc")
    cls = run_labeller(clip_campaign, "clip_cls")
    # The second and third labellers hit the cache: nothing recomputed, the same rows.
    assert (cc.embeddings_computed, cc.embeddings_cached) == (0, 6)
    assert (cls.embeddings_computed, cls.embeddings_cached) == (0, 6)
    assert dict(ImageEmbedding.objects.values_list("pk", "created_at")) == before
    for name in ("clip", "clip_cc", "clip_cls"):
        rows = machine_label_arrays(clip_campaign, name)
        assert len(rows) == 6 and {r["choice"] for r in rows} <= {"Yes", "No"}
        assert all(0 <= r["score"] <= 1 for r in rows)
        assert {r["attribute"] for r in rows} == {"dress", "suit", "tie"} and {r["setting"] for r in rows} == {"explicit"}
    label = MachineLabel.objects.filter(labeller="clip_cc").first()
    assert label.model == str(clip_campaign.spec["autolabel"]["labellers"][1]["model"]) and label.revision == "local"
    assert label.params["reference"] == "an object" and "diff" in label.params
    assert abs(label.score - min(1, max(0, (1 + label.params["diff"]) / 2))) < 1e-9
    assert (label.choice == "Yes") == (label.params["diff"] > 0)
    cls_label = MachineLabel.objects.filter(labeller="clip_cls").first()
    assert cls_label.params["seed"] == clip_campaign.seed and cls_label.params["ensemble"] == 10
    # issue 22 #9: each label records its classifiers' training and that the 0.5 cut is uncalibrated
    assert cls_label.params["train_n_iter"] == [5000] * 10 and cls_label.params["train_accuracy"] >= 0.5
    assert "constructed sentences" in cls_label.params["train_labels"] and "not calibrated" in cls_label.params["decision"]
    # CLIPScore of each image against its prompt, once per image and model.
    scores = clipscore_rows(clip_campaign)
    assert len(scores) == 6 and ImageClipScore.objects.count() == 6
    assert all(0 <= r["score"] <= 2.5 for r in scores)


def test_a_rerun_labels_nothing_twice(clip_campaign: Campaign, run_labeller: Any,
                                      django_capture_on_commit_callbacks: Any) -> None:
    run_labeller(clip_campaign, "clip")
    first = dict(MachineLabel.objects.values_list("question_id", "score"))
    with django_capture_on_commit_callbacks(execute=True):
        result = autolabel_start(campaign=clip_campaign, labeller="clip")
    assert result["queued"] == 0 and result["status"] == "done" and result["done"] == 6
    assert dict(MachineLabel.objects.values_list("question_id", "score")) == first


def test_gep_cls_training_set_is_the_papers() -> None:
    texts, y = cls_sentences(["A woman", "A man", "A person"], "in a dress", ["sitting at a table", "riding a bike"])
    assert len(texts) == 12 and sum(y) == 6
    assert "A person in a dress riding a bike." in texts and "A man sitting at a table." in texts
    assert y[texts.index("A woman in a dress sitting at a table.")] == 1 and y[texts.index("A woman riding a bike.")] == 0


def _synthetic(seed: int, n: int, dim: int = 32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=dim)
    direction /= np.linalg.norm(direction)
    y = rng.integers(0, 2, size=n)
    x = rng.normal(scale=0.3, size=(n, dim)) + np.outer(y * 2.0 - 1.0, direction)
    return x / np.linalg.norm(x, axis=1, keepdims=True), y, direction


def test_gep_cls_is_deterministic_with_a_seed_and_recovers_a_known_direction() -> None:
    # "Text" training embeddings and "image" test embeddings share one attribute direction.
    x_train, y_train, direction = _synthetic(1, 96)
    rng = np.random.default_rng(2)
    y_test = rng.integers(0, 2, size=400)
    x_test = rng.normal(scale=0.4, size=(400, 32)) + np.outer(y_test * 2.0 - 1.0, direction)
    a = cls_predict(cls_train(x_train, y_train, seed=5), x_test)
    b = cls_predict(cls_train(x_train, y_train, seed=5), x_test)
    c = cls_predict(cls_train(x_train, y_train, seed=6), x_test)
    assert np.array_equal(a, b)          # same seed: the same probabilities, bit for bit
    assert not np.array_equal(a, c)      # another seed: other members
    assert len(cls_train(x_train, y_train, seed=5)) == 10
    assert roc_auc_score(y_test, a) > 0.95
    assert ((a >= 0.5) == y_test).mean() > 0.85


def test_clip_gender_on_paired_images_uses_halves(researcher: User, media: Path, tiny_clip: Path,
                                                  run_labeller: Any) -> None:
    campaign = make_campaign(researcher, kind="pst", autolabel={"labellers": [
        {"name": "clip_gender", "model": str(tiny_clip), "threshold": 0.5}]})
    add_images(campaign, "paired", 2)
    add_images(campaign, "single", 2, seed=9)
    opened(campaign)
    job = run_labeller(campaign, "clip_gender")
    assert (job.done, job.total) == (6, 6)  # 2 paired x 2 persons + 2 single
    assert set(ImageEmbedding.objects.values_list("part", flat=True)) == {"full", "left", "right"}
    rows = machine_label_arrays(campaign, "clip_gender")
    assert {r["choice"] for r in rows} <= {"Feminine", "Masculine"}  # threshold 0.5: always decided
    for r in rows:
        assert (r["choice"] == "Feminine") == (r["score"] >= 0.5)
    strict = make_campaign(researcher, kind="pst", name="strict", autolabel={"labellers": [
        {"name": "clip_gender", "model": str(tiny_clip), "threshold": 1.0}]})
    add_images(strict, "single", 1, seed=11)
    opened(strict)
    run_labeller(strict, "clip_gender")
    # Random weights never reach p = 1.0: "Cannot identify".
    assert [r["choice"] for r in machine_label_arrays(strict, "clip_gender")] == ["Cannot identify"]


@pytest.mark.parametrize("n_sentences", [12, 96])
def test_gep_cls_trains_to_confident_probabilities_on_separable_embeddings(n_sentences: int) -> None:
    # issue 22 #9: early stopping on ~10 validation sentences left probabilities near 0.5
    rng = np.random.default_rng(1)
    dim = 32
    direction = rng.normal(size=dim)
    direction /= np.linalg.norm(direction)

    def embed(y: np.ndarray) -> np.ndarray:
        x = rng.normal(scale=0.3, size=(y.size, dim)) + np.outer(y * 2.0 - 1.0, direction)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    y_train = np.tile([1, 0], n_sentences // 2)
    x_train = embed(y_train)
    y_test = rng.integers(0, 2, size=400)
    ensemble = cls_train(x_train, y_train, seed=5)
    p = cls_predict(ensemble, embed(y_test))
    assert p[y_test == 1].mean() >= 0.8 and p[y_test == 0].mean() <= 0.2
    record = cls_training_record(ensemble, x_train, y_train)
    assert record["train_accuracy"] == 1.0 and record["train_sentences"] == n_sentences
    assert record["train_n_iter"] == [5000] * 10
