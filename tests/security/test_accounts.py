"""Issue 24, "Accounts, sessions and throttles": the researcher CLI never adopts an account, the login
back-off holds for any spelling of the JSON media type, a password in PATCH /api/annotators/me/ is
under the login policy, the per-annotator rate holds under 100 parallel requests, annotator tokens
expire / are revoked at logout and password change / rotate, and a soft-deleted campaign takes no
answers (both HIT engines)."""
from __future__ import annotations

import json
import threading
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.hits import assignment_next
from annotation.models import Answer
from annotation.services.annotators import annotator_create
from campaigns.services import campaign_delete
from common import fastpath
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

POLICY = {"LOGIN_THROTTLE_FAILURES": 3, "LOGIN_THROTTLE_BASE_DELAY_S": 60, "LOGIN_THROTTLE_MAX_DELAY_S": 600,
          "LOGIN_THROTTLE_WINDOW_S": 900, "LOGIN_THROTTLE_ADDRESS_FAILURES": 1000}
PASSWORD = "Carol-Secret-pass-9"


@pytest.fixture(autouse=True)
def _clean_cache() -> Any:
    cache.clear()
    yield
    cache.clear()


def _token_api(key: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api


@pytest.mark.django_db
def test_researcher_create_never_adopts_an_existing_account() -> None:
    _, stranger_key = annotator_create(username="carol", password=PASSWORD, consent=True)
    with pytest.raises(CommandError, match="exists already"):
        call_command("researcher", "create", "carol", stdout=StringIO())
    with pytest.raises(CommandError, match="exists already"):
        call_command("researcher", "create", "ＣＡＲＯＬ", stdout=StringIO())  # the same name, compared as sign-up does
    carol = User.objects.get(username="carol")
    assert not carol.groups.exists() and _token_api(stranger_key).get("/api/campaigns/").status_code == 403
    with pytest.raises(CommandError, match="Password refused"):
        call_command("researcher", "create", "dave", "--password", "1", stdout=StringIO())
    assert not User.objects.filter(username="dave").exists()
    out = StringIO()
    call_command("researcher", "create", "carol", "--take-over-existing", "--password", "New-researcher-pass-7",
                 stdout=out)
    carol.refresh_from_db()
    assert carol.groups.filter(name="researchers").exists() and "every credential rotated" in out.getvalue()
    assert not carol.check_password(PASSWORD) and carol.check_password("New-researcher-pass-7")
    assert _token_api(stranger_key).get("/api/campaigns/").status_code == 401  # the stranger's key is gone
    assert _token_api(Token.objects.get(user=carol).key).get("/api/campaigns/").status_code == 200


@pytest.mark.django_db
@override_settings(**POLICY)
@pytest.mark.parametrize("content_type", ["Application/JSON", "APPLICATION/JSON; charset=UTF-8", "application/json"])
def test_the_login_backoff_holds_for_any_spelling_of_json(content_type: str) -> None:
    annotator_create(username="jay", password="Jay-Secret-pass-9", consent=True)
    api = APIClient()
    body = json.dumps({"username": "jay", "password": "wrong-guess"})
    codes = [api.post("/api/auth/token/", body, content_type=content_type).status_code for _ in range(6)]
    assert codes[:3] == [400, 400, 400] and set(codes[4:]) == {429}, codes
    right = api.post("/api/auth/token/", json.dumps({"username": "jay", "password": "Jay-Secret-pass-9"}),
                     content_type=content_type)
    assert right.status_code == 429 and int(right["Retry-After"]) > 0


@pytest.mark.django_db
@override_settings(**POLICY)
def test_a_password_in_the_profile_patch_is_a_throttled_login() -> None:
    annotator, client = make_annotator("pam")
    tries = [client.patch("/api/annotators/me/", {"mturk_worker_id": "APAM1", "password": f"guess-{i}-xyz"},
                          format="json") for i in range(6)]
    assert [t.status_code for t in tries[:3]] == [400, 400, 400] and {t.status_code for t in tries[4:]} == {429}
    assert "Retry-After" in tries[-1]
    right = client.patch("/api/annotators/me/", {"mturk_worker_id": "APAM1", "password": "pam-Secret-pass-9"},
                         format="json")
    assert right.status_code == 429  # the oracle answers nothing while the account waits
    annotator.refresh_from_db()
    assert annotator.mturk_worker_id is None
    # The same counter as the login endpoint (the username's back-off).
    login = APIClient().post("/api/auth/token/", {"username": "pam", "password": "pam-Secret-pass-9"}, format="json")
    assert login.status_code == 429


@pytest.mark.django_db(transaction=True)
@override_settings(THROTTLE_RATES={"annotator": "50/minute", "anon": "100000/minute"})
def test_rate_throttle_is_atomic_under_100_parallel_requests(throttle_clock_frozen: float) -> None:
    # All 100 requests count in one window (the clock is held), so exactly the rate may pass.
    _, key = annotator_create(username="racer", password="Racer-Secret-pass-9", consent=True)
    codes: list[int] = []
    start = threading.Barrier(100)

    def call() -> None:
        try:
            start.wait()
            codes.append(_token_api(key).get("/api/annotators/me/").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Exactly the rate passes; the rest is refused (429, or 503 where the database pool is full).
    assert len(codes) == 100 and codes.count(200) == 50 and set(codes) <= {200, 429, 503}, sorted(set(codes))


@pytest.mark.django_db
def test_annotator_tokens_expire_rotate_and_are_revoked(settings: Any) -> None:
    settings.API_TOKEN_TTL_S = 3600
    annotator, key = annotator_create(username="toni", password="Toni-Secret-pass-9", consent=True)
    signup_expiry = Token.objects.get(key=key).created + timedelta(seconds=3600)
    assert _token_api(key).get("/api/annotators/me/").status_code == 200
    Token.objects.filter(key=key).update(created=timezone.now() - timedelta(hours=2))
    for fast in (True, False):  # the prepared-statement path and its ORM twin refuse it alike
        with fastpath.forced("token_auth", fast):
            expired = _token_api(key).get("/api/annotators/me/")
            assert expired.status_code == 401 and "expired" in expired.json()["detail"]
    login = APIClient().post("/api/auth/token/", {"username": "toni", "password": "Toni-Secret-pass-9"}, format="json")
    fresh = login.json()["token"]
    assert login.status_code == 200 and fresh != key and login.json()["expires_at"]
    assert signup_expiry <= timezone.now() + timedelta(seconds=3600)
    # Rotation: the new key works, the old one stops at once.
    rotated = _token_api(fresh).post("/api/auth/token/rotate/")
    assert rotated.status_code == 200 and rotated.json()["token"] != fresh and rotated.json()["expires_at"]
    assert _token_api(fresh).get("/api/annotators/me/").status_code == 401
    current = rotated.json()["token"]
    # Logout through the API revokes it.
    assert _token_api(current).post("/api/auth/logout/").json()["tokens_revoked"] == 1
    assert _token_api(current).get("/api/annotators/me/").status_code == 401
    # A session logout (the pages) revokes it too.
    key2 = Token.objects.create(user=annotator.user).key
    browser = APIClient()
    browser.force_login(annotator.user)
    browser.post("/accounts/logout/")
    assert not Token.objects.filter(key=key2).exists()
    # A password change, by any path, revokes it.
    key3 = Token.objects.create(user=annotator.user).key
    user = User.objects.get(pk=annotator.user_id)
    user.set_password("Toni-Other-pass-8")
    user.save()
    assert _token_api(key3).get("/api/annotators/me/").status_code == 401


@pytest.mark.django_db
@pytest.mark.parametrize("fast", [True, False])
def test_no_answer_goes_into_a_soft_deleted_campaign(researcher: User, fast: bool) -> None:
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2})
    make_images(campaign, "explicit", 4)
    campaign = open_campaign(campaign)
    annotator, client = make_annotator("del", campaign=campaign)
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    campaign_delete(campaign=campaign)
    answers = [{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in hit["questions"]]
    with fastpath.forced("hit_engine", fast):
        reply = client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": answers}, format="json")
    assert reply.status_code == 404 and not Answer.objects.exists()
