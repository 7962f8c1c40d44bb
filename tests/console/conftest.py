"""Fixtures for the console: a small PST campaign generated with the placeholder backend (eager
Celery, media in a temporary folder), logged-in clients in each role."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.services import generation_start
from tests.builders.console import small_pst


@pytest.fixture
def eager() -> Iterator[None]:
    """Generation tasks run in-process (as the generation tests do)."""
    from config.celery import app

    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


@pytest.fixture
def generated(researcher: User, media: Path, eager: None, django_capture_on_commit_callbacks: Any) -> Campaign:
    campaign = campaign_create(owner=researcher, spec=small_pst())
    with django_capture_on_commit_callbacks(execute=True):
        generation_start(campaign=campaign)
    campaign.refresh_from_db()
    return campaign
