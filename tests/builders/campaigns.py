"""Campaigns, images, annotators and open questions built through the product's services (the
generation pipeline is not needed: Image rows are created directly)."""
from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.models import Annotator
from annotation.services.annotators import annotator_create, enrollment_consent
from annotation.services.lifecycle import questions_open
from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.models import Image
from tests.conftest import GEP_MINIMAL, PST_MINIMAL, token_client


def make_campaign(owner: User, *, kind: str = "gep", annotation: dict[str, Any] | None = None,
                  **design: Any) -> Campaign:
    spec = copy.deepcopy(GEP_MINIMAL if kind == "gep" else PST_MINIMAL)
    spec["design"].update(design)
    if annotation is not None:
        spec["annotation"] = annotation
    return campaign_create(owner=owner, spec=spec)


def make_images(campaign: Campaign, setting: str, count: int, *, status: str = Image.Status.DONE,
                offset: int = 0, **fields: Any) -> list[Image]:
    """Images (sample 0) of the first `count` prompts of a setting, after skipping `offset` prompts."""
    prompts = list(campaign.prompts.filter(setting=setting).order_by("position")[offset:offset + count])
    assert len(prompts) == count, f"only {len(prompts)} {setting} prompts"
    return Image.objects.bulk_create([
        Image(campaign=campaign, prompt=p, sample_index=0, seed=p.seeds[0], status=status,
              web_file=f"images/{campaign.pk}-{p.pk}.webp", **fields)
        for p in prompts
    ])


def make_annotator(name: str, *, campaign: Campaign | None = None) -> tuple[Annotator, APIClient]:
    annotator, _ = annotator_create(username=name, password=f"{name}-Secret-pass-9", consent=True)
    if campaign is not None:
        enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
    return annotator, token_client(annotator.user)


def open_campaign(campaign: Campaign) -> Campaign:
    questions_open(campaign=campaign)
    campaign.refresh_from_db()
    return campaign


# GEP neutral with two genders and two contexts: 4 prompts x 2 samples = 8 images.
SMALL_SPEC: dict[str, Any] = {
    "name": "small", "kind": "gep", "seed": 7,
    "design": {"settings": ["neutral"], "samples": 2, "contexts": ["sitting at a table", "walking in a park"]},
    "backend": {"name": "placeholder", "width": 64, "height": 48},
}


def small_spec(**backend: Any) -> dict[str, Any]:
    spec = copy.deepcopy(SMALL_SPEC)
    if backend:
        spec["backend"] = backend
    return spec


def hit_submit_all(client: APIClient, hit: dict[str, Any], choice: str | None = None, time_ms: int = 1500) -> Any:
    """Submit a HIT answering every question with `choice` (default: each question's first choice)."""
    answers = [{"question": q["id"], "choice": choice or q["choices"][0], "time_ms": time_ms} for q in hit["questions"]]
    return client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": answers}, format="json")
