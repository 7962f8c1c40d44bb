"""The campaign API: create/read with token auth, field errors, ownership."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from campaigns.models import Campaign, Prompt
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def test_create_and_read_with_token_auth(api: APIClient, pst_spec: dict[str, Any]) -> None:
    resp = api.post("/api/campaigns/", pst_spec, format="json")
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["prompt_count"] == 840 and body["images_planned"] == 920
    cid = body["id"]
    detail = api.get(f"/api/campaigns/{cid}/").json()
    assert detail["name"] == "sd15-pst" and detail["kind"] == "pst" and detail["status"] == "draft"
    assert detail["spec"]["design"]["samples"] == {"single": 3, "paired": 1}
    progress = detail["progress"]
    assert progress["prompts"] == 840 and progress["images_planned"] == 920
    assert progress["images_done"] == 0 and progress["images_failed"] == 0
    assert Prompt.objects.filter(campaign_id=cid).count() == 840


def test_yaml_body_is_accepted(api: APIClient) -> None:
    body = "name: g\nkind: gep\nseed: 4\ndesign: {settings: [neutral]}\nbackend: {name: placeholder}\n"
    resp = api.post("/api/campaigns/", body, content_type="application/yaml")
    assert resp.status_code == 201, resp.content
    assert resp.json()["images_planned"] == 160


def test_bad_spec_is_a_400_with_field_errors_and_creates_nothing(api: APIClient, pst_spec: dict[str, Any]) -> None:
    pst_spec["design"]["templates"] = {"single": "one person"}
    pst_spec["backend"] = {"name": "nope"}
    resp = api.post("/api/campaigns/", pst_spec, format="json")
    assert resp.status_code == 400
    errors = resp.json()["errors"]
    assert "design.templates.single" in errors and "backend.name" in errors
    assert "design.templates.single" in resp.json()["detail"]
    assert Campaign.objects.count() == 0 and Prompt.objects.count() == 0


def test_not_json_object_is_a_400(api: APIClient) -> None:
    resp = api.post("/api/campaigns/", [1, 2], format="json")
    assert resp.status_code == 400
    assert "spec" in resp.json()["errors"]


def test_prompts_are_paginated_with_metadata(api: APIClient, gep_spec: dict[str, Any]) -> None:
    cid = api.post("/api/campaigns/", gep_spec, format="json").json()["id"]
    page = api.get(f"/api/campaigns/{cid}/prompts/?page_size=500").json()
    assert page["count"] == 512 and len(page["results"]) == 500 and page["next"]
    first = page["results"][0]
    assert first["metadata"] == {"setting": "neutral", "gender": "woman", "attribute": None,
                                 "context": "sitting at a table"}
    assert first["text"] == "A woman sitting at a table." and len(first["seeds"]) == 5
    capped = api.get(f"/api/campaigns/{cid}/prompts/?page_size=1000").json()
    assert len(capped["results"]) == 500  # page_size is capped at 500
    explicit = api.get(f"/api/campaigns/{cid}/prompts/?setting=explicit&page_size=500").json()
    assert explicit["count"] == 480 and len(explicit["results"]) == 480
    assert all(r["setting"] == "explicit" for r in explicit["results"])


def test_one_researcher_cannot_read_anothers_campaign(api: APIClient, other_researcher: User,
                                                       staff_user: User, pst_spec: dict[str, Any]) -> None:
    cid = api.post("/api/campaigns/", pst_spec, format="json").json()["id"]
    other = token_client(other_researcher)
    for url in (f"/api/campaigns/{cid}/", f"/api/campaigns/{cid}/prompts/", f"/api/campaigns/{cid}/spec/"):
        assert other.get(url).status_code == 404
    assert other.get("/api/campaigns/").json()["count"] == 0
    assert api.get("/api/campaigns/").json()["count"] == 1
    staff = token_client(staff_user)
    assert staff.get(f"/api/campaigns/{cid}/").status_code == 200
    assert staff.get("/api/campaigns/").json()["count"] == 1


def test_non_researchers_and_anonymous_are_refused(plain_user: User, pst_spec: dict[str, Any]) -> None:
    assert APIClient().post("/api/campaigns/", pst_spec, format="json").status_code == 401
    assert token_client(plain_user).post("/api/campaigns/", pst_spec, format="json").status_code == 403
    assert Campaign.objects.count() == 0


def test_session_auth_works_for_logged_in_researchers(researcher: User, pst_spec: dict[str, Any]) -> None:
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username="xavier", password="xavier-pass-123")
    assert client.get("/api/campaigns/").status_code == 200
    # Session-authenticated writes need the CSRF token, as in a browser.
    assert client.post("/api/campaigns/", pst_spec, format="json").status_code == 403


def test_spec_download_round_trips(api: APIClient, pst_spec: dict[str, Any]) -> None:
    pst_spec["design"]["aspect"] = "power"
    created = api.post("/api/campaigns/", pst_spec, format="json").json()
    spec = api.get(f"/api/campaigns/{created['id']}/spec/").json()
    again = api.post("/api/campaigns/", spec, format="json").json()
    a = list(Prompt.objects.filter(campaign_id=created["id"]).values_list("key", "text", "seeds"))
    b = list(Prompt.objects.filter(campaign_id=again["id"]).values_list("key", "text", "seeds"))
    assert a == b and len(a) == 144
    yaml_resp = api.get(f"/api/campaigns/{created['id']}/spec/?as=yaml")
    assert yaml_resp["Content-Type"] == "application/yaml" and b"aspect: power" in yaml_resp.content


def test_preview_creates_nothing(api: APIClient, gep_spec: dict[str, Any]) -> None:
    resp = api.post("/api/specs/preview/", gep_spec, format="json")
    assert resp.status_code == 200
    body = resp.json()
    assert body["prompt_count"] == 512 and body["images_planned"] == 2560
    assert body["by_setting"]["explicit"] == {"prompts": 480, "images": 2400}
    assert body["examples"] and Campaign.objects.count() == 0


def test_presets_catalogue(api: APIClient) -> None:
    body = api.get("/api/presets/").json()
    assert len(body["pst"]["occupation"]["groups"][0]["identities"]) == 20
    assert len(body["pst"]["power"]["occupations"]) == 36
    assert body["pst"]["labor_stats_percent_female"]["accountant"] == 58.8  # "same as auditor"
    assert body["pst"]["labor_stats_percent_female"]["chief"] is None
    assert len(body["gep"]["attributes"]) == 15 and len(body["gep"]["contexts"]) == 16


def test_openapi_schema_lists_the_endpoints(api: APIClient) -> None:
    resp = api.get("/api/schema/?format=json")
    assert resp.status_code == 200
    paths = resp.json()["paths"]
    assert "/api/campaigns/" in paths and "/api/campaigns/{campaign_id}/prompts/" in paths
