"""Issue 13, point 3: an external id never logs anyone in as someone else.

Through the pages and the API: crowd links only enter accounts made by that platform's link; a
password account claiming the id is entered only by its owner's password (and never keeps the
worker out of the link account); the MTurk page carries a short-lived token
scoped to its campaign, never the permanent key; a GET link never replaces another user's session.
Plus the scoped-token mechanism on its own (annotation/scoped_tokens.py)."""
from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.test import Client
from rest_framework import exceptions
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotator, Assignment
from annotation.scoped_tokens import scoped_token_issue, scoped_token_read
from annotation.services.annotators import annotator_create
from campaigns.models import Campaign
from tests.builders.crowd import accept_params, crowd_campaign

pytestmark = pytest.mark.django_db

PASSWORD = "Paula-Secret-pass-9"


def _page_token(response: Any) -> str:
    found = re.search(r'data-auth-token="([^"]*)"', response.content.decode())
    assert found is not None, response.content.decode()[:500]
    return found.group(1)


def _api(token: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return api


def _prolific(campaign: Campaign, pid: str) -> str:
    return f"/prolific/{campaign.pk}/?PROLIFIC_PID={pid}&STUDY_ID=st0000000001&SESSION_ID=se0000000001"


def test_a_link_never_enters_a_password_account_holding_the_id(campaign: Campaign) -> None:
    owner, _ = annotator_create(username="paula", password=PASSWORD, consent=True, mturk_worker_id="AWORKERP",
                                prolific_pid="PIDPAULA")
    browser = Client()
    page = browser.get(f"/mturk/{campaign.pk}/", accept_params(worker="AWORKERP"))
    # The claim never keeps the platform's worker out: the link enters the id's own link account.
    assert page.status_code == 200
    link = Annotator.objects.get(kind=Annotator.Kind.MTURK, mturk_worker_id="AWORKERP")
    assert int(browser.session["_auth_user_id"]) == link.user_id != owner.user_id
    prolific = Client().get(_prolific(campaign, "PIDPAULA"))
    assert prolific.status_code == 200
    assert Annotator.objects.filter(kind=Annotator.Kind.PROLIFIC, prolific_pid="PIDPAULA").exists()
    # Its owner gets in with the password (a POST with the CSRF token), then works with a scoped token.
    url = f"/mturk/{campaign.pk}/?" + "&".join(f"{k}={v}" for k, v in accept_params(worker="AWORKERP").items())
    owner_browser = Client()
    wrong = owner_browser.post(url, {"action": "login", "username": "paula", "password": "guess-guess-1"})
    assert wrong.status_code == 403 and "_auth_user_id" not in owner_browser.session
    ok = owner_browser.post(url, {"action": "login", "username": "paula", "password": PASSWORD})
    assert ok.status_code == 302 and int(owner_browser.session["_auth_user_id"]) == owner.user_id
    work = owner_browser.get(url)
    assert work.status_code == 200 and _page_token(work).startswith("s1.")
    assert int(owner_browser.session["_auth_user_id"]) == owner.user_id


def test_login_csrf_a_get_link_never_replaces_another_session(campaign: Campaign, researcher: User) -> None:
    browser = Client()
    browser.force_login(researcher)
    for url in (f"/mturk/{campaign.pk}/?" + "&".join(f"{k}={v}" for k, v in accept_params(worker="AEVIL").items()),
                _prolific(campaign, "PIDEVIL")):
        page = browser.get(url)
        assert page.status_code == 409 and "You are logged in as xavier" in page.content.decode()
        assert int(browser.session["_auth_user_id"]) == researcher.pk
        assert "data-auth-token" not in page.content.decode()
    assert not Annotator.objects.exists()  # nothing created by the GETs
    assert browser.get("/console/").status_code == 200  # still the researcher
    # A cross-site POST without the CSRF token changes nothing either.
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(researcher)
    assert strict.post(_prolific(campaign, "PIDEVIL"), {"action": "switch"}).status_code == 403
    assert int(strict.session["_auth_user_id"]) == researcher.pk


def test_the_page_token_is_short_lived_and_scoped_to_its_campaign(campaign: Campaign, researcher: User,
                                                                  settings: Any) -> None:
    other = crowd_campaign(researcher)
    page = Client().get(f"/mturk/{campaign.pk}/", accept_params())
    token = _page_token(page)
    annotator = Annotator.objects.get(mturk_worker_id="AWORKER1")
    assert annotator.kind == Annotator.Kind.MTURK and not annotator.user.has_usable_password()
    assert not Token.objects.filter(user=annotator.user).exists()  # no permanent key at all
    api = _api(token)
    assert api.get(f"/api/campaigns/{campaign.pk}/task/").status_code == 200
    assert api.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json").status_code == 200
    hit = api.post(f"/api/mturk/{campaign.pk}/assignment/", {"assignmentId": "3ASSIGN1", "hitId": "3HIT1"},
                   format="json")
    assert hit.status_code == 201
    # Another campaign's endpoints, the profile, the researcher API: refused.
    assert api.get(f"/api/campaigns/{other.pk}/task/").status_code == 403
    assert api.post(f"/api/campaigns/{other.pk}/consent/", {"consent": True}, format="json").status_code == 403
    assert api.get("/api/annotators/me/").status_code == 403
    assert api.patch("/api/annotators/me/", {"demographics": {}}, format="json").status_code == 403
    assert api.get("/api/campaigns/").status_code == 403
    # The task page's optional demographics form of this campaign (and withdrawing one's own): allowed.
    assert api.get(f"/api/campaigns/{campaign.pk}/demographics/").status_code != 403
    assert api.get(f"/api/campaigns/{other.pk}/demographics/").status_code == 403
    assert api.post("/api/annotators/me/demographics/withdraw/").status_code != 403
    # A HIT of the other campaign (same account, through a page of that campaign) cannot be submitted with it.
    other_api = _api(_page_token(Client().get(f"/mturk/{other.pk}/", accept_params(assignment="3ASSIGN7"))))
    other_api.post(f"/api/campaigns/{other.pk}/consent/", {"consent": True}, format="json")
    other_hit = other_api.post(f"/api/mturk/{other.pk}/assignment/", {"assignmentId": "3ASSIGN7", "hitId": "3HIT7"},
                               format="json").json()
    assert Assignment.objects.get(pk=other_hit["id"]).campaign_id == other.pk
    answers = [{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in other_hit["questions"]]
    before = Assignment.objects.count()
    assert api.post(f"/api/assignments/{other_hit['id']}/submit/", {"answers": answers, "next": True},
                    format="json").status_code == 403
    assert Assignment.objects.count() == before  # nor a next HIT in the other campaign
    done = other_api.post(f"/api/assignments/{other_hit['id']}/submit/", {"answers": answers, "next": True},
                          format="json")
    assert done.status_code == 200
    following = done.json()["next"]  # the HIT's own campaign: within the other page's scope
    assert following["status"] == 201
    assert Assignment.objects.get(pk=following["hit"]["id"]).campaign_id == other.pk
    # Expired: a clear 401.
    settings.CROWD_TOKEN_TTL_S = 60
    real = time.time
    signing.time.time = lambda: real() - 3600  # type: ignore[attr-defined]
    try:
        old = scoped_token_issue(user_id=annotator.user_id, campaign_id=campaign.pk)
    finally:
        signing.time.time = real  # type: ignore[attr-defined]
    expired = _api(old).get(f"/api/campaigns/{campaign.pk}/task/")
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]


def test_scoped_token_mechanism() -> None:
    token = scoped_token_issue(user_id=7, campaign_id=11)
    read = scoped_token_read(token)
    assert (read.user_id, read.campaign_id, read.key) == (7, 11, token)
    payload = token[3:]
    for forged in (token[:-2] + ("AA" if not token.endswith("AA") else "BB"), "s1." + payload.replace(":", ";", 1),
                   "s1." + signing.dumps({"u": 1, "c": 11}, salt="another-salt"), "s1."):
        with pytest.raises(exceptions.AuthenticationFailed):
            scoped_token_read(forged)
