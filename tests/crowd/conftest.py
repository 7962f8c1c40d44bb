"""Fixtures of the crowd pages: an open GEP campaign (6 explicit images, R=3, HITs of 2 questions)
with crowd settings, and a fake MTurk client installed in place of boto3's."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from campaigns.models import Campaign
from crowd import services
from tests.annotation.conftest import make_campaign, make_images, open_campaign

SUBMIT_TO = "https://workersandbox.mturk.com"


class FakeMTurk:
    """Records every call; answers like boto3 (an empty dict) unless told to fail."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail = False

    def __getattr__(self, name: str) -> Any:
        def call(**kwargs: Any) -> dict[str, Any]:
            self.calls.append((name, kwargs))
            if self.fail:
                raise RuntimeError("MTurk is down")
            return {}
        return call


@pytest.fixture
def fake_mturk(monkeypatch: pytest.MonkeyPatch) -> FakeMTurk:
    fake = FakeMTurk()
    monkeypatch.setattr(services, "mturk_client_factory", lambda **kwargs: fake)
    return fake


def crowd_campaign(owner: User, *, prolific: dict[str, Any] | None = None, images: int = 6) -> Campaign:
    campaign = make_campaign(owner, settings=["explicit"], annotation={"hit_size": 2})
    if prolific is not None:
        campaign.spec["crowd"] = {"prolific": prolific}
        campaign.save(update_fields=["spec"])
    make_images(campaign, "explicit", images)
    return open_campaign(campaign)


@pytest.fixture
def campaign(researcher: User) -> Campaign:
    return crowd_campaign(researcher)


def accept_params(worker: str = "AWORKER1", assignment: str = "3ASSIGN1", hit: str = "3HIT1",
                  submit_to: str = SUBMIT_TO) -> dict[str, str]:
    return {"assignmentId": assignment, "hitId": hit, "workerId": worker, "turkSubmitTo": submit_to}
