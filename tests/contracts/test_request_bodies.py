"""Request bodies are declared at the edge (issue 14, target 5): every operation that reads a body
documents it in the OpenAPI schema with named properties (no free-form `dict`), and the input
serializers refuse what the services used to receive unchecked."""
from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.conftest import token_client

pytestmark = pytest.mark.django_db

# Operations that take no body at all (actions whose only input is the URL).
NO_BODY = {"open", "close", "reopen", "pause", "resume", "cancel", "generate", "retry", "heartbeat", "return",
           "next", "retry-failed", "rebuild",
           "assignments", "include", "exclude", "withdraw", "logout", "rotate", "releases"}


def _schema(api: APIClient) -> dict[str, Any]:
    resp = api.get("/api/schema/?format=json")
    assert resp.status_code == 200
    return resp.json()


def _properties(schema: dict[str, Any], body: dict[str, Any]) -> set[str]:
    props: set[str] = set()
    for media in body.get("content", {}).values():
        ref = media.get("schema", {}).get("$ref")
        target = schema["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else media.get("schema", {})
        props |= set(target.get("properties", {}))
    return props


def test_every_body_taking_operation_documents_its_fields(api: APIClient) -> None:
    schema = _schema(api)
    undocumented, documented = [], 0
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            if method not in ("post", "put", "patch"):
                continue
            last = path.rstrip("/").rsplit("/", 1)[-1]
            body = op.get("requestBody")
            if body is None:
                if last not in NO_BODY and not last.startswith("{"):
                    undocumented.append(f"{method.upper()} {path}: no request body documented")
                continue
            if not _properties(schema, body):
                undocumented.append(f"{method.upper()} {path}: a free-form body")
            else:
                documented += 1
    assert not undocumented, undocumented
    assert documented >= 11


@pytest.mark.parametrize(("path", "field"), [
    ("/api/annotators/me/", "demographics"),
])
def test_the_schema_names_the_fields(api: APIClient, path: str, field: str) -> None:
    schema = _schema(api)
    assert field in _properties(schema, schema["paths"][path]["patch"]["requestBody"])


def test_signup_consent_must_be_a_json_true(api: APIClient) -> None:
    """"yes" is not consent: the edge refuses a coerced boolean (DRF's plain BooleanField takes it)."""
    resp = api.post("/api/annotators/", {"username": "casey", "password": "casey-Secret-pass-9",
                                                "consent": "yes"}, format="json")
    assert resp.status_code == 400
    assert "consent" in resp.json()["errors"]
    resp = api.post("/api/annotators/", {"username": "casey", "password": "casey-Secret-pass-9",
                                                "consent": True}, format="json")
    assert resp.status_code == 201, resp.json()


def test_bodies_of_the_wrong_type_are_named(researcher: Any) -> None:
    from tests.builders.campaigns import make_campaign, make_images, open_campaign

    campaign = make_campaign(researcher, settings=["explicit"])
    make_images(campaign, "explicit", 2)
    open_campaign(campaign)
    client = token_client(researcher)
    base = f"/api/campaigns/{campaign.pk}"
    cases = [
        (f"{base}/questions/redundancy/", {"required": "3", "filter": {}}, "required"),
        (f"{base}/questions/redundancy/", {"required": 3, "questions": ["1"]}, "questions.0"),
        (f"{base}/questions/gold/", {"items": [{"question": "x", "answer": "Yes"}]}, "items.0.question"),
        (f"{base}/qualifications/", {"family": "attribute:dress", "items": "all"}, "items"),
        (f"{base}/qualifications/", {"family": "attribute:dress", "items": [], "max_attempts": 0}, "max_attempts"),
    ]
    for url, body, field in cases:
        resp = client.post(url, body, format="json")
        assert resp.status_code == 400, (url, body, resp.content[:300])
        assert field in resp.json()["errors"], (field, resp.json())
    resp = client.post(f"{base}/questions/redundancy/", [1, 2], format="json")
    assert resp.status_code == 400 and "body" in resp.json()["errors"]
