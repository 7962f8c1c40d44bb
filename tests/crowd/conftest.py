"""Fixtures of the crowd pages: an open GEP campaign (6 explicit images, R=3, HITs of 2 questions)
with crowd settings, and a fake MTurk client installed in place of boto3's."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from campaigns.models import Campaign
from crowd import services
from tests.builders.crowd import FakeMTurk, crowd_campaign


@pytest.fixture
def fake_mturk(monkeypatch: pytest.MonkeyPatch) -> FakeMTurk:
    fake = FakeMTurk()
    monkeypatch.setattr(services, "mturk_client_factory", lambda **kwargs: fake)
    return fake


@pytest.fixture
def campaign(researcher: User) -> Campaign:
    return crowd_campaign(researcher)


