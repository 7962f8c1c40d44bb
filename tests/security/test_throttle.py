"""Issue 13, point 4: one throttle policy on every login surface and every way an account is made
(common/throttle.py), the client address behind the TLS proxy (common/clientaddr.py); and point 9's
account rules (common/accounts.py): NFKC + casefold usernames, whitespace passwords refused."""
from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.test import Client, RequestFactory, override_settings
from rest_framework.test import APIClient

from annotation.models import Annotator
from annotation.services.annotators import annotator_create
from common import throttle
from common.accounts import SubstantialPasswordValidator, username_key
from common.clientaddr import client_address
from tests.builders.crowd import accept_params, crowd_campaign

pytestmark = pytest.mark.django_db

POLICY = {"LOGIN_THROTTLE_FAILURES": 3, "LOGIN_THROTTLE_BASE_DELAY_S": 2, "LOGIN_THROTTLE_MAX_DELAY_S": 60,
          "LOGIN_THROTTLE_WINDOW_S": 900, "LOGIN_THROTTLE_ADDRESS_FAILURES": 1000}


@pytest.fixture(autouse=True)
def _clean_cache() -> Any:
    cache.clear()
    yield
    cache.clear()


def _researcher(name: str, password: str) -> User:
    from tests.conftest import make_researcher

    user = make_researcher(name)
    user.set_password(password)
    user.save()
    return user


@override_settings(**POLICY)
def test_console_login_backs_off_and_lets_the_owner_in_after_the_wait() -> None:
    _researcher("rita", "Rita-right-pass-1")
    browser = Client()
    for _ in range(3):  # free failures
        assert browser.post("/accounts/login/", {"username": "rita", "password": "wrong"}).status_code == 200
    # 25 wrong passwords then the right one: the right one waits too (no login while backing off)
    codes = [browser.post("/accounts/login/", {"username": "rita", "password": "wrong"}).status_code
             for _ in range(22)]
    assert codes.count(429) == 22  # refused during the wait, and not counted
    blocked = browser.post("/accounts/login/", {"username": "rita", "password": "Rita-right-pass-1"})
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) >= 1
    assert "Too many failed logins" in blocked.content.decode() and "_auth_user_id" not in browser.session
    # the same name in another case or width is the same account's counter
    assert browser.post("/accounts/login/", {"username": "RITA", "password": "x"}).status_code == 429
    time.sleep(int(blocked["Retry-After"]) + 0.2)  # a delay, not a lockout: the owner gets in
    ok = browser.post("/accounts/login/", {"username": "rita", "password": "Rita-right-pass-1"})
    assert ok.status_code == 302 and "_auth_user_id" in browser.session
    assert cache.get(throttle._user_keys("rita")[0]) is None  # a success clears the count


@override_settings(**POLICY)
def test_every_login_surface_shares_the_policy(researcher: User) -> None:
    campaign = crowd_campaign(researcher)
    annotator_create(username="annie", password="Annie-Secret-pass-9", consent=True)
    api = APIClient()
    for _ in range(3):
        assert api.post("/api/auth/token/", {"username": "annie", "password": "bad"}, format="json").status_code == 400
    # the failures on the token endpoint slow the annotator login form and the admin login for the name
    page = Client()
    refused = page.post(f"/work/{campaign.pk}/login/", {"username": "annie", "password": "Annie-Secret-pass-9"})
    assert refused.status_code == 429 and refused["Retry-After"]
    assert page.post("/admin/login/", {"username": "annie", "password": "x"}).status_code == 429
    token = api.post("/api/auth/token/", {"username": "annie", "password": "Annie-Secret-pass-9"}, format="json")
    assert token.status_code == 429 and "Too many failed logins" in token.json()["detail"]
    # another account from the same address is not slowed (the address limit is separate)
    annotator_create(username="bert", password="Bert-Secret-pass-9", consent=True)
    assert api.post("/api/auth/token/", {"username": "bert", "password": "Bert-Secret-pass-9"},
                    format="json").status_code == 200


@override_settings(**{**POLICY, "LOGIN_THROTTLE_FAILURES": 1000, "LOGIN_THROTTLE_ADDRESS_FAILURES": 4,
                      "TRUSTED_PROXY_COUNT": 1})
def test_address_limit_counts_the_client_behind_the_proxy(throttle_clock_frozen: float) -> None:
    api = APIClient()
    for i in range(4):  # many usernames from one client address
        api.post("/api/auth/token/", {"username": f"user{i}", "password": "bad"}, format="json",
                 HTTP_X_FORWARDED_FOR="198.51.100.7", REMOTE_ADDR="10.0.0.2")
    refused = api.post("/api/auth/token/", {"username": "someone", "password": "bad"}, format="json",
                       HTTP_X_FORWARDED_FOR="198.51.100.7", REMOTE_ADDR="10.0.0.2")
    assert refused.status_code == 429 and "from your address" in refused.json()["detail"]
    # another client behind the same proxy has its own counter; a spoofed left-hand entry is ignored
    other = api.post("/api/auth/token/", {"username": "someone", "password": "bad"}, format="json",
                     HTTP_X_FORWARDED_FOR="198.51.100.7, 203.0.113.9", REMOTE_ADDR="10.0.0.2")
    assert other.status_code == 400


@override_settings(SIGNUP_THROTTLE_PER_ADDRESS=2, SIGNUP_THROTTLE_WINDOW_S=3600)
def test_signups_are_limited_per_address_on_every_path(researcher: User, throttle_clock_frozen: float) -> None:
    campaign = crowd_campaign(researcher)
    api = APIClient()
    body = {"password": "Long-enough-pass-1", "consent": True}
    assert api.post("/api/annotators/", {**body, "username": "s1"}, format="json").status_code == 201
    assert api.post("/api/annotators/", {**body, "username": "s2"}, format="json").status_code == 201
    third = api.post("/api/annotators/", {**body, "username": "s3"}, format="json")
    assert third.status_code == 429 and third["Retry-After"] and "Too many new accounts" in third.json()["detail"]
    form = Client().post(f"/work/{campaign.pk}/signup/", {"username": "s4", "password1": "Long-enough-pass-1",
                                                         "password2": "Long-enough-pass-1", "consent": "on"})
    assert form.status_code == 429
    # crowd links: a new external id is an account creation from this address
    link = Client().get(f"/mturk/{campaign.pk}/", accept_params(worker="ANEWONE"))
    assert link.status_code == 429 and link["Retry-After"]
    assert not Annotator.objects.filter(mturk_worker_id="ANEWONE").exists()
    assert User.objects.filter(username__in=["s3", "s4"]).count() == 0
    # from another address: allowed
    assert Client(REMOTE_ADDR="192.0.2.44").get(f"/mturk/{campaign.pk}/",
                                               accept_params(worker="ANEWONE")).status_code == 200


def test_client_address_unit(settings: Any) -> None:
    rf = RequestFactory()
    req = rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7")
    assert client_address(req) == "10.0.0.2"  # no proxy configured: REMOTE_ADDR
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_address(req) == "198.51.100.7"
    settings.TRUSTED_PROXY_COUNT = 2
    assert client_address(req) == "1.2.3.4"
    settings.TRUSTED_PROXY_COUNT = 3  # fewer entries than proxies: REMOTE_ADDR
    assert client_address(req) == "10.0.0.2"
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_address(rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="not-an-ip")) == "10.0.0.2"
    assert client_address(rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="[2001:db8::1]:443")) == "2001:db8::1"
    settings.TRUSTED_PROXY_HEADER = "X-Real-IP"
    assert client_address(rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_REAL_IP="192.0.2.1")) == "192.0.2.1"


@override_settings(**POLICY)
def test_backoff_unit() -> None:
    assert [throttle.backoff_delay(n) for n in range(8)] == [0, 0, 0, 2, 4, 8, 16, 32]
    assert throttle.backoff_delay(40) == 60  # capped
    assert throttle.login_wait(username="zed", address="192.0.2.9") is None
    for _ in range(3):
        throttle.login_failed(username="zed", address="192.0.2.9")
    wait = throttle.login_wait(username="ＺＥＤ", address="192.0.2.10")  # per username, any address
    assert wait is not None and 1 <= wait.retry_after <= 2
    throttle.login_succeeded(username="zed")
    assert throttle.login_wait(username="zed", address="192.0.2.9") is None


# ------------------------------------------------------------------ point 9: usernames and passwords
def test_fullwidth_and_case_variants_of_a_username_are_taken() -> None:
    api = APIClient()
    body = {"password": "Long-enough-pass-1", "consent": True}
    assert api.post("/api/annotators/", {**body, "username": "alice"}, format="json").status_code == 201
    for variant in ("ＡＬＩＣＥ", "ALICE", "Alice", "ａｌｉｃｅ"):
        taken = api.post("/api/annotators/", {**body, "username": variant}, format="json")
        assert taken.status_code == 400 and "username" in taken.json()["errors"], variant
    assert User.objects.count() == 1
    assert username_key("ＡＬＩＣＥ") == username_key("alice") == "alice"
    assert username_key("STRASSE") == username_key("straße")


def test_the_database_refuses_a_case_variant() -> None:
    User.objects.create_user(username="bob", password=None)
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create_user(username="BOB", password=None)


def test_the_signup_form_uses_the_same_rules(researcher: User) -> None:
    campaign = crowd_campaign(researcher)
    User.objects.create_user(username="carol", password=None)
    page = Client().post(f"/work/{campaign.pk}/signup/", {"username": "ＣＡＲＯＬ", "password1": "Long-enough-pass-1",
                                                         "password2": "Long-enough-pass-1", "consent": "on"})
    assert page.status_code == 400 and "taken" in page.content.decode()
    blank = Client().post(f"/work/{campaign.pk}/signup/", {"username": "dave", "password1": " " * 8,
                                                          "password2": " " * 8, "consent": "on"})
    assert blank.status_code == 400 and "only whitespace" in blank.content.decode()
    assert User.objects.count() == 2


@pytest.mark.parametrize("password", [" " * 8, " " * 20, "\t\t\t\t\t\t\t\t", "   ab1   ", "   Zq9!   "])
def test_whitespace_passwords_are_a_clear_400(password: str) -> None:
    response = APIClient().post("/api/annotators/", {"username": "erin", "password": password, "consent": True},
                                format="json")
    assert response.status_code == 400 and "password" in response.json()["errors"]
    assert not User.objects.filter(username="erin").exists()


def test_password_validator_unit() -> None:
    validator = SubstantialPasswordValidator(min_length=8)
    validator.validate("  long enough pass  ")
    for bad in ("", " " * 30, "  short  "):
        with pytest.raises(Exception, match="whitespace|too short"):
            validator.validate(bad)


def test_a_sign_up_race_on_one_name_is_a_400(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sign-ups of `dora` / `DORA` at once: both pass the check; the LOWER(username) index decides."""
    from annotation.services import annotators as service

    User.objects.create_user(username="dora", password=None)
    answers = iter([False, True])  # the check before (the other sign-up not committed yet), then after
    monkeypatch.setattr(service, "username_taken", lambda name: next(answers))
    response = APIClient().post("/api/annotators/", {"username": "DORA", "password": "Long-enough-pass-1",
                                                     "consent": True}, format="json")
    assert response.status_code == 400 and "username" in response.json()["errors"]
    assert User.objects.count() == 1
