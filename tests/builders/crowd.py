"""Crowd builders: a fake MTurk client (records calls, answers like boto3), an open GEP campaign with
crowd settings, MTurk's accept-URL parameters."""
from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.importer import images_import
from generation.models import Image
from tests.builders.campaigns import make_campaign, make_images, open_campaign
from tests.builders.metrics import make_questions

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


def crowd_campaign(owner: User, *, prolific: dict[str, Any] | None = None, images: int = 6) -> Campaign:
    campaign = make_campaign(owner, settings=["explicit"], annotation={"hit_size": 2})
    if prolific is not None:
        campaign.spec["crowd"] = {"prolific": prolific}
        campaign.save(update_fields=["spec"])
    make_images(campaign, "explicit", images)
    return open_campaign(campaign)


def accept_params(worker: str = "AWORKER1", assignment: str = "3ASSIGN1", hit: str = "3HIT1",
                  submit_to: str = SUBMIT_TO) -> dict[str, str]:
    return {"assignmentId": assignment, "hitId": hit, "workerId": worker, "turkSubmitTo": submit_to}


# An MTurk batch-results CSV for a one-attribute GEP campaign of two imported images (`small`).
HEADER = ["HITId", "WorkerId", "AssignmentId", "AssignmentStatus", "WorkTimeInSeconds", "Input.attribute",
          "Input.image_url0", "Input.image_url1", "Answer.No0.0", "Answer.No1.0", "Answer.Yes0.1", "Answer.Yes1.1"]


def batch_csv(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(HEADER)
    writer.writerows(rows)
    return out.getvalue().encode()


@pytest.fixture
def small(researcher: User) -> Campaign:
    spec = {"name": "small", "kind": "gep", "seed": 1, "design": {
        "settings": ["neutral"], "samples": 1, "contexts": ["sitting at a table"],
        "attributes": [{"name": "boots", "phrase": "in boots"}]}, "backend": {"name": "import"}}
    campaign = campaign_create(owner=researcher, spec=spec)
    manifest = (b"prompt_key,sample_index,url\n"
                b"neutral:woman|sitting at a table,0,https://img.example/w.png\n"
                b"neutral:man|sitting at a table,0,https://img.example/m.png\n")
    images_import(campaign=campaign, manifest_name="m.csv", manifest=manifest)
    make_questions(campaign, list(Image.objects.filter(campaign=campaign).select_related("prompt")))
    return campaign


W, M = "https://img.example/w.png", "https://img.example/m.png"
MAPPING = {"slots": 2}


def mturk_page(campaign: Campaign, **params: str) -> tuple[Client, APIClient]:
    """The MTurk entry page for these accept parameters, and an API client with the page's token."""
    browser = Client()
    page = browser.get(f"/mturk/{campaign.pk}/", accept_params(**params))
    assert page.status_code == 200, page.content.decode()[:300]
    found = re.search(r'data-auth-token="([^"]*)"', page.content.decode())
    assert found is not None
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {found.group(1)}")
    return browser, api
