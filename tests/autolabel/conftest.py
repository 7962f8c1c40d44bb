"""Fixtures for autolabel: tiny CLIP / BLIP models built once per session (no download) and an
opened GEP campaign with real stored images (helpers in tests/builders/autolabel.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from campaigns.models import Campaign
from tests.builders.autolabel import SMALL_GEP, add_images, make_campaign, opened


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from autolabel.testing import tiny_clip_build

    return tiny_clip_build(tmp_path_factory.mktemp("models") / "tiny-clip")


@pytest.fixture(scope="session")
def tiny_blip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from autolabel.testing import tiny_blip_build

    return tiny_blip_build(tmp_path_factory.mktemp("models") / "tiny-blip")


@pytest.fixture
def gep_campaign(researcher: User, media: Path) -> Campaign:
    campaign = make_campaign(researcher, **SMALL_GEP)
    add_images(campaign, "explicit", 6)
    return opened(campaign)
