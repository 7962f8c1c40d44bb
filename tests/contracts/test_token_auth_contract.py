"""Token authentication's portable twin (`TokenAuthentication._authenticate_orm`, what the SQLite demo
runs) against its PostgreSQL fast path (one prepared statement built from the models' metadata): on
PostgreSQL, for the same tokens, both must return equal users, tokens and annotator profiles (every
concrete field, the instance state, the cached relations), refuse the same tokens with the same
errors, and answer the same over HTTP."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from rest_framework import exceptions
from rest_framework.authtoken.models import Token

from annotation.authentication import TokenAuthentication
from annotation.models import Annotator
from annotation.services.annotators import annotator_create, annotator_update
from common import fastpath
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql() -> None:
    assert connection.vendor == "postgresql", "the contract compares the PostgreSQL fast path with its twin"


def _fields(instance: Any) -> dict[str, Any]:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def _authenticate(key: str) -> Any:
    try:
        user, token = TokenAuthentication().authenticate_credentials(key)
    except exceptions.AuthenticationFailed as exc:
        return ("refused", str(exc.detail), exc.status_code)
    annotator = getattr(user, "_annotator_cache", None)
    return {
        "user": (type(user), _fields(user), user._state.db, user._state.adding),
        "token": (_fields(token), token.user is user, token._state.db, token._state.adding),
        "annotator": None if annotator is None else (
            _fields(annotator), annotator.user is user, annotator._state.db, annotator._state.adding),
    }


def _both(key: str) -> tuple[Any, Any]:
    with fastpath.forced("token_auth", True):
        sql = _authenticate(key)
    with fastpath.forced("token_auth", False):
        orm = _authenticate(key)
    return sql, orm


def test_users_tokens_and_profiles_are_equal(researcher: User) -> None:
    annotator, key = annotator_create(username="tia", password="Tia-secret-pass-9", consent=True)
    annotator_update(annotator=annotator, mturk_worker_id="A1TIA", prolific_pid="P-TIA", password="Tia-secret-pass-9",
                     demographics={"age_band": "25-34", "gender": "self_describe", "gender_self_described": "fluid"})
    plain, _ = annotator_create(username="tom", password="Tom-secret-pass-9", consent=True)
    research_key = Token.objects.create(user=researcher).key
    inactive, inactive_key = annotator_create(username="ina", password="Ina-secret-pass-9", consent=True)
    User.objects.filter(pk=inactive.user_id).update(is_active=False)
    keys = {"annotator with profile": key, "annotator": Token.objects.get(user=plain.user).key,
            "researcher": research_key, "inactive": inactive_key, "unknown": "0" * 40}
    outcomes = {}
    for name, token_key in keys.items():
        sql, orm = _both(token_key)
        assert sql == orm, name
        outcomes[name] = orm
    # What was compared is what matters: the profile with its JSON, the researcher without one, refusals.
    assert outcomes["annotator with profile"]["annotator"][0]["demographics"] == {
        "age_band": "25-34", "gender": "self_describe", "gender_self_described": "fluid"}
    assert outcomes["annotator with profile"]["annotator"][1] is True
    assert outcomes["researcher"]["annotator"] is None
    assert outcomes["inactive"][0] == "refused" and "inactive" in outcomes["inactive"][1]
    assert outcomes["unknown"] == ("refused", "Invalid token.", 401)


def test_the_same_answers_over_http(researcher: User) -> None:
    annotator, _ = annotator_create(username="hal", password="Hal-secret-pass-9", consent=True)
    annotator_update(annotator=annotator, demographics={"country": "NZ"})
    clients = {"annotator": token_client(annotator.user), "researcher": token_client(researcher),
               "nobody": token_client(None)}
    clients["stranger"] = token_client(None)
    clients["stranger"].credentials(HTTP_AUTHORIZATION="Token " + "f" * 40)
    answers: dict[bool, dict[str, tuple[int, Any]]] = {}
    for on in (True, False):
        with fastpath.forced("token_auth", on):
            answers[on] = {name: (r.status_code, r.json()) for name, c in clients.items()
                           for r in [c.get("/api/annotators/me/")]}
    assert answers[True] == answers[False]
    assert answers[True]["annotator"] == (200, {"id": annotator.pk, "username": "hal", "mturk_worker_id": None,
                                                "prolific_pid": None, "demographics": {"country": "NZ"},
                                                "demographics_hidden": False})
    assert answers[True]["researcher"][0] == 403 and answers[True]["stranger"][0] == 401
    assert Annotator.objects.count() == 1
