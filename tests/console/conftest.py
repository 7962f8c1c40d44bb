"""Fixtures for the console: a small PST campaign generated with the placeholder backend (eager
Celery, media in a temporary folder), logged-in clients in each role."""
from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.services import generation_start

# PST with two custom groups of two identities: single 2 x 4 = 4... see below.
SMALL_PST: dict[str, Any] = {
    "name": "small-pst", "kind": "pst", "seed": 3,
    "design": {"aspect": "occupation", "settings": ["single", "paired"], "samples": {"single": 1, "paired": 1},
               "identities": {"groups": [
                   {"name": "male", "stereotype": "masculine", "identities": ["carpenter", "pilot"]},
                   {"name": "female", "stereotype": "feminine", "identities": ["nurse", "editor"]}]}},
    "backend": {"name": "placeholder", "width": 64, "height": 64},
    "annotation": {"redundancy": 3, "hit_size": 4},
}


def small_pst(**changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(SMALL_PST)
    spec.update(changes)
    return spec


@pytest.fixture
def eager() -> Iterator[None]:
    """Generation tasks run in-process (as the generation tests do)."""
    from config.celery import app

    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


def login(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def generated(researcher: User, media: Path, eager: None, django_capture_on_commit_callbacks: Any) -> Campaign:
    campaign = campaign_create(owner=researcher, spec=small_pst())
    with django_capture_on_commit_callbacks(execute=True):
        generation_start(campaign=campaign)
    campaign.refresh_from_db()
    return campaign
