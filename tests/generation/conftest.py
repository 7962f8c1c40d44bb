"""Fixtures for generation: a small campaign, media in a temporary folder, eager Celery."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from campaigns.models import Campaign
from campaigns.services import campaign_create
from tests.builders.campaigns import SMALL_SPEC, small_spec


@pytest.fixture
def campaign(researcher: User, media: Path) -> Campaign:
    return campaign_create(owner=researcher, spec=small_spec(**SMALL_SPEC["backend"]))


@pytest.fixture
def eager() -> Iterator[None]:
    """Run tasks in-process (no broker; not propagating, since an eager retry runs nested and then
    raises Retry): the API / service tests check the logic, the worker tests
    check the real broker and processes."""
    from config.celery import app

    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, False
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old
