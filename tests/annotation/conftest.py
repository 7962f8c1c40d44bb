"""Fixtures for annotation (the builders are in tests/builders/campaigns.py)."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.models import Annotator
from campaigns.models import Campaign
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign


@pytest.fixture
def gep_campaign(researcher: User) -> Campaign:
    """GEP, explicit setting only: 6 images, one question each, R=3, HITs of 2 questions."""
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2})
    make_images(campaign, "explicit", 6)
    return open_campaign(campaign)


@pytest.fixture
def worker(gep_campaign: Campaign) -> tuple[Annotator, APIClient]:
    return make_annotator("wanda", campaign=gep_campaign)


@pytest.fixture(params=["sql", "orm"])
def hit_engine(request: pytest.FixtureRequest, settings: Any) -> str:
    """Run a test through both implementations of the HIT engine's hot paths: the hand-written
    PostgreSQL statements (annotation/engine_pg.py, what production runs on PostgreSQL) and the ORM
    version (what SQLite runs, and the reference behaviour)."""
    from django.db import connection

    if request.param == "sql" and connection.vendor != "postgresql":
        pytest.skip("the SQL engine is PostgreSQL's; CI runs it there")
    settings.FASTPATHS = {**settings.FASTPATHS, "hit_engine": request.param == "sql"}
    return request.param
