"""The spec's `autolabel` section (400 naming the field) and `human_sample`: a seeded, stratified
sample of images is the only part open to human annotation, recorded and reported."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.models import Question
from annotation.services.lifecycle import questions_redundancy_set
from autolabel.models import HumanSampleImage
from autolabel.sample import human_sample_draw
from autolabel.selectors import human_sample_active, human_sample_image_ids, human_sample_summary
from campaigns.spec import SpecError, spec_normalize
from tests.builders.autolabel import add_images, make_campaign, opened

pytestmark = pytest.mark.django_db
BASE = {"name": "x", "kind": "gep", "seed": 3, "design": {"settings": ["neutral"]}, "backend": {"name": "placeholder"}}


def _errors(section: Any) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as err:
        spec_normalize({**BASE, "autolabel": section})
    return err.value.errors


def test_section_defaults_and_errors() -> None:
    assert spec_normalize(BASE)["autolabel"] == {"labellers": [], "human_sample": None}
    spec = spec_normalize({**BASE, "autolabel": {"labellers": [{"name": "clip_cls"}, {"name": "clip_cc"}],
                                                 "human_sample": {"fraction": 0.2}}})
    cls, cc = spec["autolabel"]["labellers"]
    assert cls == {"name": "clip_cls", "model": "openai/clip-vit-large-patch14", "revision": None, "seed": None,
                   "ensemble": 10, "threshold": 0.5, "genders": ["A woman", "A man", "A person"]}
    assert cc["reference"] == "an object"
    assert spec["autolabel"]["human_sample"] == {"fraction": 0.2, "seed": 3}   # the campaign seed by default
    assert "autolabel.labellers.0.name" in _errors({"labellers": [{"name": "gpt"}]})
    assert "autolabel.labellers.0.threshold" in _errors({"labellers": [{"name": "clip_gender", "threshold": 2}]})
    assert "autolabel.labellers.0.ensemble" in _errors({"labellers": [{"name": "clip_cls", "ensemble": "ten"}]})
    assert "autolabel.labellers.0.colour" in _errors({"labellers": [{"name": "clip", "colour": 1}]})
    assert "autolabel.labellers.1.name" in _errors({"labellers": [{"name": "clip"}, {"name": "clip"}]})
    assert "autolabel.labellers.0.prompts" in _errors({"labellers": [{"name": "clip_gender", "prompts": {"a": "b"}}]})
    assert "autolabel.labellers" in _errors({"labellers": {"name": "clip"}})
    assert "autolabel.human_sample.fraction" in _errors({"human_sample": {"fraction": 0}})
    assert "autolabel.human_sample.fraction" in _errors({"human_sample": {"fraction": 1.5}})
    assert "autolabel.human_sample.seed" in _errors({"human_sample": {"fraction": 0.5, "seed": -1}})
    assert "autolabel.sample" in _errors({"sample": {}})
    assert "autolabel" in _errors([1])


def test_api_names_the_field(api: APIClient) -> None:
    resp = api.post("/api/campaigns/", {**BASE, "autolabel": {"labellers": [{"name": "clip", "threshold": "high"}]}},
                    format="json")
    assert resp.status_code == 400 and "autolabel.labellers.0.threshold" in resp.json()["errors"]


def test_the_draw_is_seeded_and_stratified() -> None:
    strata = {"explicit|dress": list(range(100, 120)), "explicit|tie": list(range(200, 210)), "neutral": [7, 8, 9]}
    a = human_sample_draw(fraction=0.2, seed=1, strata=strata)
    assert a == human_sample_draw(fraction=0.2, seed=1, strata=strata)
    assert a != human_sample_draw(fraction=0.2, seed=2, strata=strata)
    assert [len(a[s]) for s in sorted(a)] == [4, 2, 1]   # round(0.2 n), at least one per stratum
    assert set(a["explicit|dress"]) <= set(strata["explicit|dress"])
    # Uniform: over many seeds every image of a stratum is drawn about equally often.
    counts = {i: 0 for i in range(100, 120)}
    for seed in range(500):
        for i in human_sample_draw(fraction=0.2, seed=seed, strata={"s": list(range(100, 120))})["s"]:
            counts[i] += 1
    assert min(counts.values()) > 60 and max(counts.values()) < 140   # expected 100 each


def test_only_the_sample_is_open_to_humans(researcher: User, media: Path, api: APIClient) -> None:
    campaign = make_campaign(researcher, autolabel={"human_sample": {"fraction": 0.5, "seed": 9}},
                             settings=["neutral", "explicit"], attributes=["dress", "suit"],
                             contexts=["sitting at a table", "riding a bike"])
    add_images(campaign, "neutral", 4)
    add_images(campaign, "explicit", 8, seed=2)
    opened(campaign)
    sample = human_sample_image_ids(campaign)
    assert human_sample_active(campaign) and len(sample) == 6   # half of each of three strata of 4
    strata = dict(HumanSampleImage.objects.filter(campaign=campaign).values_list("image_id", "stratum"))
    assert sorted(strata.values()) == sorted(["neutral"] * 2 + ["explicit|dress"] * 2 + ["explicit|suit"] * 2)
    assert human_sample_summary(campaign)["strata"] == {"explicit|dress": 2, "explicit|suit": 2, "neutral": 2}
    questions = Question.objects.filter(campaign=campaign)
    # Every image has its questions (machine labels attach to them); only the sample's are wanted by humans.
    assert questions.values("image").distinct().count() == 12
    assert set(questions.filter(required__gt=0).values_list("image_id", flat=True)) == sample
    assert not questions.exclude(image_id__in=sample).exclude(required=0).exists()
    # The redundancy tool leaves the held-out questions closed.
    questions_redundancy_set(campaign=campaign, required=5, filters={})
    assert not questions.exclude(image_id__in=sample).exclude(required=0).exists()
    # An annotator is only ever offered sampled images.
    from annotation.services.annotators import annotator_create, enrollment_consent
    from tests.conftest import token_client

    annotator, _ = annotator_create(username="ann", password="ann-Secret-pass-9", consent=True)
    enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
    client = token_client(annotator.user)
    seen = set()
    for _ in range(10):
        resp = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
        if resp.status_code == 204:
            break
        hit = resp.json()
        seen |= {Question.objects.get(pk=q["id"]).image_id for q in hit["questions"]}
        client.post(f"/api/assignments/{hit['id']}/return/")
        break
    assert seen and seen <= sample


def test_without_a_sample_every_image_is_open(gep_campaign: Any) -> None:
    assert not human_sample_active(gep_campaign) and human_sample_image_ids(gep_campaign) == set()
    assert not Question.objects.filter(campaign=gep_campaign, required=0).exists()
