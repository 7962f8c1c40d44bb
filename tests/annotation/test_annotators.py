"""Annotator sign-up, token login, profile (external ids, demographics), consent and the task page data."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Annotator, Enrollment
from tests.builders.campaigns import make_annotator
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def test_signup_requires_consent_and_returns_a_token(gep_campaign):
    client = APIClient()
    no_consent = client.post("/api/annotators/", {"username": "nina", "password": "Long-enough-pass-1"}, format="json")
    assert no_consent.status_code == 400 and "consent" in no_consent.json()["errors"]
    weak = client.post("/api/annotators/", {"username": "nina", "password": "123", "consent": True}, format="json")
    assert weak.status_code == 400 and "password" in weak.json()["errors"]
    ok = client.post("/api/annotators/", {"username": "nina", "password": "Long-enough-pass-1", "consent": True},
                     format="json")
    assert ok.status_code == 201 and ok.json()["token"]
    taken = client.post("/api/annotators/", {"username": "nina", "password": "Long-enough-pass-1", "consent": True},
                        format="json")
    assert taken.status_code == 400 and "username" in taken.json()["errors"]
    login = client.post("/api/auth/token/", {"username": "nina", "password": "Long-enough-pass-1"}, format="json")
    assert login.status_code == 200 and login.json()["token"] == ok.json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {ok.json()['token']}")
    # An annotator is no researcher.
    assert client.get("/api/campaigns/").status_code == 403
    task = client.get(f"/api/campaigns/{gep_campaign.pk}/task/").json()
    assert task["consented"] is False and task["campaign"]["name"] == gep_campaign.name
    assert client.post(f"/api/campaigns/{gep_campaign.pk}/consent/", {"consent": False}, format="json").status_code == 400
    consent = client.post(f"/api/campaigns/{gep_campaign.pk}/consent/", {"consent": True}, format="json")
    assert consent.status_code == 200 and consent.json()["consent_text"] == task["consent_text"]
    enrollment = Enrollment.objects.get(annotator__user__username="nina")
    assert enrollment.consented_at and enrollment.consent_text == task["consent_text"]
    assert client.get(f"/api/campaigns/{gep_campaign.pk}/task/").json()["consented"] is True
    assert client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/").status_code == 201


def test_profile_external_ids_and_demographics():
    annotator, client = make_annotator("otis")
    # Linking an external id needs the account's password, not only its token.
    bare = client.patch("/api/annotators/me/", {"mturk_worker_id": "AWORKER1"}, format="json")
    assert bare.status_code == 400 and "password" in bare.json()["errors"]
    wrong = client.patch("/api/annotators/me/", {"mturk_worker_id": "AWORKER1", "password": "nope"}, format="json")
    assert wrong.status_code == 400 and "password" in wrong.json()["errors"]
    annotator.refresh_from_db()
    assert annotator.mturk_worker_id is None
    response = client.patch("/api/annotators/me/", {"mturk_worker_id": "AWORKER1", "prolific_pid": "5f00",
                                                    "demographics": {"age_band": "25-34"},
                                                    "password": "otis-Secret-pass-9"}, format="json")
    assert response.status_code == 200 and response.json()["mturk_worker_id"] == "AWORKER1"
    annotator.refresh_from_db()
    assert annotator.prolific_pid == "5f00" and annotator.demographics == {"age_band": "25-34"}
    # demographics alone need no password
    assert client.patch("/api/annotators/me/", {"demographics": {}}, format="json").status_code == 200
    _, other = make_annotator("olaf")
    clash = other.patch("/api/annotators/me/", {"mturk_worker_id": "AWORKER1", "password": "olaf-Secret-pass-9"},
                        format="json")
    assert clash.status_code == 400 and "mturk_worker_id" in clash.json()["errors"]
    assert other.patch("/api/annotators/me/", {"salary": 1}, format="json").status_code == 400


def test_draft_campaigns_are_invisible_to_annotators(researcher):
    from .conftest import make_campaign

    campaign = make_campaign(researcher, settings=["explicit"])
    _, client = make_annotator("dora")
    assert client.get(f"/api/campaigns/{campaign.pk}/task/").status_code == 404
    assert client.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json").status_code == 404
    assert Annotator.objects.count() == 1


def test_researcher_is_not_an_annotator(api, gep_campaign, researcher):
    assert api.get(f"/api/campaigns/{gep_campaign.pk}/task/").status_code == 403
    assert token_client(researcher).get("/api/annotators/me/").status_code == 403
