"""A small world with every role: researcher X owns an open GEP campaign (images with
content-addressed keys, a gold question, a qualification test); researcher Y owns another; staff;
annotators A and B are enrolled in X's campaign and A holds a HIT."""
from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from rest_framework.test import APIClient

from annotation.hits import assignment_next
from annotation.models import Annotator, Assignment, Qualification, Question
from annotation.services.lifecycle import questions_gold_set
from annotation.services.qualification import qualification_create
from campaigns.models import Campaign
from common import counters
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
    example_id: int = 0       # X's example image of the instructions

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


def build_world() -> World:
    """Build the world (the database must be reachable)."""
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
    _ensure_media_file(images[0])
    from annotation.services.examples import example_add

    example = example_add(campaign=campaign, family=images_family(campaign, images[-1]), image=images[-1].pk,
                          answer="Yes")
    return World(x=x, y=y, staff=staff, a=a, b=b, campaign=campaign, y_campaign=y_campaign, image=images[0],
                 assignment=Assignment.objects.get(pk=payload["id"]), qualification=qualification, gold=gold,
                 example_id=example.pk)


def _ensure_media_file(image: Image) -> None:
    """A real file behind the image's media URL (storage writes are not rolled back with the database)."""
    if not default_storage.exists(image.web_file):
        default_storage.save(image.web_file, ContentFile(b"RIFF0000WEBP"))


@pytest.fixture
def world(db: None) -> World:
    """A fresh world for one test."""
    return build_world()


@pytest.fixture(scope="module")
def _module_world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """The world built once per module, inside an outer transaction that is rolled back after the
    module's last test (each test's own transaction is then a savepoint inside it). The database stays
    blocked between tests, as for any test that does not ask for it."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            built = build_world()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    try:
        yield built
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def module_world(_module_world: World, db: None) -> World:
    """The module's shared world for one test, as a fresh world would be: this test's writes are rolled
    back after it (pytest-django's per-test transaction); every object is read again from the database
    (a test that deleted or changed one cannot leak it into the next, and one missing fails loudly); the
    cache (claims, counters, upload jobs keyed by these objects' ids) is emptied; the media file exists."""
    w = _module_world
    cache.clear()
    annotators = Annotator.objects.select_related("user")
    fresh = World(x=User.objects.get(pk=w.x.pk), y=User.objects.get(pk=w.y.pk), staff=User.objects.get(pk=w.staff.pk),
                  a=annotators.get(pk=w.a.pk), b=annotators.get(pk=w.b.pk),
                  campaign=Campaign.objects.get(pk=w.campaign.pk), y_campaign=Campaign.objects.get(pk=w.y_campaign.pk),
                  image=Image.objects.get(pk=w.image.pk), assignment=Assignment.objects.get(pk=w.assignment.pk),
                  qualification=Qualification.objects.get(pk=w.qualification.pk), gold=Question.objects.get(pk=w.gold.pk),
                  example_id=w.example_id)
    _ensure_media_file(fresh.image)
    return fresh


def images_family(campaign: Campaign, image: Image) -> str:
    return campaign.questions.filter(image=image).values_list("family", flat=True).first()


@pytest.fixture
def throttle_clock_frozen(monkeypatch: pytest.MonkeyPatch) -> float:
    """Hold the clock of every fixed rate window (`common.counters.fixed_window`: the API throttles, the
    CSP report rate, the login and sign-up policy's per-address windows) at this instant: on a slow
    machine a burst of requests could straddle a window's end and pass the rate once in each window."""
    frozen = time.time()
    monkeypatch.setattr(counters, "time", SimpleNamespace(time=lambda: frozen))
    return frozen
