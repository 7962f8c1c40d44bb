"""A small world with every role: researcher X owns an open GEP campaign (images with
content-addressed keys, a gold question, a qualification test); researcher Y owns another; staff;
annotators A and B are enrolled in X's campaign and A holds a HIT."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.hits import assignment_next
from annotation.models import Annotator, Assignment, Qualification, Question
from annotation.services.lifecycle import questions_gold_set
from annotation.services.qualification import qualification_create
from campaigns.models import Campaign
from generation.models import Image
from generation.storage import web_key
from tests.builders.campaigns import make_annotator, make_campaign, open_campaign
from tests.conftest import make_researcher, token_client


def make_opaque_images(campaign: Campaign, setting: str, count: int, **fields: Any) -> list[Image]:
    """Done images whose storage keys are content-addressed (as generation stores them)."""
    prompts = list(campaign.prompts.filter(setting=setting).order_by("position")[:count])
    images = []
    for p in prompts:
        digest = hashlib.sha256(f"{campaign.pk}:{p.pk}".encode()).hexdigest()
        images.append(Image(campaign=campaign, prompt=p, sample_index=0, seed=p.seeds[0], status=Image.Status.DONE,
                            sha256=digest, file=f"images/{digest[:2]}/{digest}.png", web_file=web_key(digest),
                            backend="placeholder", model="secret-model-name", width=64, height=64, **fields))
    return Image.objects.bulk_create(images)


@dataclass
class World:
    x: User
    y: User
    staff: User
    a: Annotator
    b: Annotator
    campaign: Campaign        # X's, open
    y_campaign: Campaign      # Y's
    image: Image              # X's
    assignment: Assignment    # A's
    qualification: Qualification  # X's
    gold: Question

    def client(self, role: str) -> APIClient:
        user = {"anonymous": None, "annotator_a": self.a.user, "annotator_b": self.b.user, "researcher_x": self.x,
                "researcher_y": self.y, "staff": self.staff}[role]
        return token_client(user)

    def session_client(self, role: str) -> APIClient:
        client = APIClient()
        user = {"anonymous": None, "annotator_a": self.a.user, "annotator_b": self.b.user, "researcher_x": self.x,
                "researcher_y": self.y, "staff": self.staff}[role]
        if user is not None:
            client.force_login(user)
        return client


@pytest.fixture
def world(db: None) -> World:
    x, y = make_researcher("xavier"), make_researcher("yvonne")
    staff = make_researcher("stella", staff=True)
    campaign = make_campaign(x, settings=["explicit"], annotation={"hit_size": 2})
    images = make_opaque_images(campaign, "explicit", 6)
    open_campaign(campaign)
    attribute = campaign.questions.order_by("pk").first().family
    qualification = qualification_create(campaign=campaign, name="warm-up", family=attribute,
                                         items=[{"image": images[0].pk, "correct": "Yes"}])
    gold = campaign.questions.order_by("pk").last()
    questions_gold_set(campaign=campaign, items=[{"question": gold.pk, "answer": gold.choices[0]}])
    y_campaign = make_campaign(y, settings=["explicit"])
    a, _ = make_annotator("annie", campaign=campaign)
    b, _ = make_annotator("bernd", campaign=campaign)
    from annotation.models import QualificationAttempt

    for annotator in (a, b):
        QualificationAttempt.objects.create(qualification=qualification, annotator=annotator, answers=["Yes"],
                                            correct=1, total=1, passed=True)
    payload, _created = assignment_next(annotator=a, campaign_id=campaign.pk)
    assert payload is not None
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    if not default_storage.exists(images[0].web_file):  # a real file behind the media URL
        default_storage.save(images[0].web_file, ContentFile(b"RIFF0000WEBP"))
    return World(x=x, y=y, staff=staff, a=a, b=b, campaign=campaign, y_campaign=y_campaign, image=images[0],
                 assignment=Assignment.objects.get(pk=payload["id"]), qualification=qualification, gold=gold)
