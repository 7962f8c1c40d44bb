"""No request body can cost more than its size (issue 13, point 2).

YAML is read only where a spec is uploaded (campaign create, spec preview, the console's spec
editor), with aliases refused and node count and depth bounded; every other endpoint takes JSON
(plus form / multipart where it needs them) and answers 415 to YAML. JSON nesting is bounded; NUL
bytes and lone surrogates are a 400 wherever they come from (JSON, YAML, forms, query strings); an
error message never echoes more than a clipped piece of the input."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from tests.builders.security import alias_bomb
from tests.conftest import GEP_MINIMAL

from .conftest import World

pytestmark = pytest.mark.django_db


def _yaml(client: Any, method: str, url: str, body: str) -> Any:
    return getattr(client, method)(url, body, content_type="application/yaml")


def test_alias_bomb_to_annotator_endpoints_is_refused_without_reading_it(world: World) -> None:
    client = world.client("annotator_a")
    client.raise_request_exception = False
    bomb = alias_bomb()
    assert len(bomb) < 500
    started = time.monotonic()
    submit = _yaml(client, "post", f"/api/assignments/{world.assignment.pk}/submit/", bomb)
    me = _yaml(client, "patch", "/api/annotators/me/", bomb)
    for response in (submit, me):
        assert response.status_code == 415, response.content[:300]
        assert len(response.content) < 2000
        assert "application/yaml" in response.json()["detail"]
    assert time.monotonic() - started < 5


def test_yaml_specs_refuse_aliases_with_a_400_naming_them(world: World) -> None:
    client = world.client("researcher_x")
    for url in ("/api/specs/preview/", "/api/campaigns/"):
        response = _yaml(client, "post", url, alias_bomb())
        assert response.status_code == 400, (url, response.content[:300])
        assert len(response.content) < 2000
        assert "alias" in response.json()["detail"].lower()
    # A plain YAML spec still works at both.
    import yaml

    text = yaml.safe_dump(GEP_MINIMAL)
    assert _yaml(client, "post", "/api/specs/preview/", text).status_code == 200
    created = _yaml(client, "post", "/api/campaigns/", text)
    assert created.status_code == 201, created.content


def _api_routes() -> list[tuple[str, str]]:
    """(method, url) of every API route that takes a body, with 1 for every path parameter."""
    import re

    from rest_framework.views import APIView

    out: list[tuple[str, str]] = []

    def walk(patterns: Any, prefix: str) -> None:
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                walk(p.url_patterns, route)
            elif isinstance(p, URLPattern) and route.startswith("api/"):
                view = getattr(p.callback, "view_class", None) or getattr(p.callback, "cls", None)
                if view is None or not issubclass(view, APIView):
                    continue
                url = "/" + re.sub(r"<int:[a-z_]+>", "1", route).replace("^", "").replace("$", "")
                for method in ("post", "put", "patch"):
                    if hasattr(view, method):
                        out.append((method, url))

    walk(get_resolver().url_patterns, "")
    return out


def test_only_spec_uploads_accept_yaml(world: World) -> None:
    routes = _api_routes()
    assert len(routes) >= 20
    spec_routes = {("post", "/api/campaigns/"), ("post", "/api/specs/preview/")}
    for role in ("researcher_x", "annotator_a", "staff"):
        client = world.client(role)
        client.raise_request_exception = False
        for method, url in routes:
            response = _yaml(client, method, url, alias_bomb(4))
            assert response.status_code < 500, (role, method, url, response.content[:300])
            assert len(response.content) < 4000, (role, method, url)
            if response.status_code in (401, 403, 404, 405):
                continue  # refused before the body is read
            if (method, url) in spec_routes:
                assert response.status_code == 400, (method, url)
            else:
                assert response.status_code == 415, (role, method, url, response.status_code, response.content[:200])


@pytest.mark.parametrize("opener,closer", [("[", "]"), ('{"a":', "}")])
def test_deep_json_is_a_400(world: World, opener: str, closer: str) -> None:
    deep = opener * 5000 + "1" + closer * 5000
    researcher = world.client("researcher_x")
    annotator = world.client("annotator_a")
    for client in (researcher, annotator):
        client.raise_request_exception = False
    cases = [
        (researcher, "post", "/api/specs/preview/", "application/json"),
        (researcher, "post", "/api/campaigns/", "application/json"),
        (annotator, "post", f"/api/assignments/{world.assignment.pk}/submit/", "application/json"),
        (annotator, "patch", "/api/annotators/me/", "application/json"),
    ]
    for client, method, url, ctype in cases:
        response = getattr(client, method)(url, deep, content_type=ctype)
        assert response.status_code == 400, (url, response.status_code, response.content[:200])
        assert "nest" in response.json()["detail"].lower()


def test_deep_yaml_spec_is_a_400(world: World) -> None:
    client = world.client("researcher_x")
    client.raise_request_exception = False
    response = _yaml(client, "post", "/api/specs/preview/", "a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert response.status_code == 400
    assert "nest" in response.json()["detail"].lower()


BAD_TEXT = ["ab\x00cd", "ab\ud800cd", "\udfff"]


@pytest.mark.parametrize("bad", BAD_TEXT)
def test_nul_and_lone_surrogates_in_json_are_a_400(world: World, bad: str) -> None:
    anon = APIClient(raise_request_exception=False)
    body = json.dumps({"username": bad, "password": "a-Good-pass-123", "consent": True})
    signup = anon.post("/api/annotators/", body, content_type="application/json")
    assert signup.status_code == 400, signup.content[:300]
    assert "username" in signup.json()["errors"]
    spec = json.dumps({**GEP_MINIMAL, "name": bad})
    researcher = world.client("researcher_x")
    researcher.raise_request_exception = False
    for url in ("/api/specs/preview/", "/api/campaigns/"):
        response = researcher.post(url, spec, content_type="application/json")
        assert response.status_code == 400, (url, response.content[:300])
        assert "name" in response.json()["errors"]
    # a key, not a value
    keyed = json.dumps({**GEP_MINIMAL, "design": {bad: 1}})
    response = researcher.post("/api/specs/preview/", keyed, content_type="application/json")
    assert response.status_code == 400


def test_nul_and_surrogates_in_yaml_specs_are_a_400(world: World) -> None:
    client = world.client("researcher_x")
    client.raise_request_exception = False
    for name in ('"ab\\0cd"', '"ab\\ud800cd"'):
        text = f"name: {name}\nkind: gep\nbackend: {{name: placeholder}}\n"
        response = _yaml(client, "post", "/api/campaigns/", text)
        assert response.status_code == 400, response.content[:300]
        # libyaml refuses a surrogate escape while parsing ("body"); the NUL is found in the value
        assert {"name", "body"} & set(response.json()["errors"])
    text = 'name: "ab\\0cd"\nkind: gep\nbackend: {name: placeholder}\n'
    assert "name" in _yaml(client, "post", "/api/specs/preview/", text).json()["errors"]


def test_nul_in_forms_and_query_strings_is_a_400(world: World) -> None:
    c = world.campaign.pk
    forms = Client(raise_request_exception=False)
    signup = forms.post(f"/work/{c}/signup/", {"username": "ev\x00il", "password1": "a-Good-pass-123",
                                               "password2": "a-Good-pass-123", "consent": "on"})
    assert signup.status_code == 400
    login = forms.post(f"/work/{c}/login/", {"username": "an\x00nie", "password": "x"})
    assert login.status_code == 400
    researcher = world.client("researcher_x")
    researcher.raise_request_exception = False
    for url in (f"/api/campaigns/{c}/images/?setting=%00", f"/api/campaigns/{c}/questions/?family=a%00b",
                f"/api/campaigns/{c}/prompts/?setting=x%00"):
        response = researcher.get(url)
        assert response.status_code == 400, (url, response.status_code)
    console = Client(raise_request_exception=False)
    console.force_login(world.x)
    page = console.post("/console/new/", {"spec": json.dumps({**GEP_MINIMAL, "name": "a\x00b"})})
    assert page.status_code == 400
    page = console.post("/console/new/", {"spec": '{"name": "a\\u0000b", "kind": "gep"}'})
    assert page.status_code == 400
    # The console's raw spec editor reads YAML with the same rules: aliases refused.
    page = console.post("/console/new/", {"spec": alias_bomb()})
    assert page.status_code == 400 and "alias" in page.content.decode().lower() and len(page.content) < 100_000


def test_error_messages_clip_what_they_echo(world: World) -> None:
    client = world.client("researcher_x")
    huge = "k" * 100_000
    spec = {**GEP_MINIMAL, huge: 1, "kind": "x" * 100_000, "seed": ["s" * 1000] * 1000,
            "design": {"settings": ["neutral"], "samples": "9" * 50_000}}
    response = client.post("/api/specs/preview/", spec, format="json")
    assert response.status_code == 400
    assert len(response.content) < 20_000, len(response.content)
    body = response.json()
    for path, messages in body["errors"].items():
        assert len(path) <= 300
        for message in messages:
            assert len(message) <= 600, message[:100]
    # many unknown keys: the error list itself is bounded
    many = {**GEP_MINIMAL, **{f"unknown{i}": i for i in range(5000)}}
    response = client.post("/api/specs/preview/", many, format="json")
    assert response.status_code == 400 and len(response.content) < 50_000


def test_every_api_view_parses_through_the_input_gate(world: World) -> None:
    """No API view may name parsers that skip common.inputs (DRF's own token view did): a system
    check fails the deploy if one does, and the token endpoint answers deep JSON with a 400."""
    from django.core.management import call_command

    from common.checks import api_views, unsafe_parsers

    assert len(list(api_views())) >= 40
    assert unsafe_parsers() == []
    call_command("check", "--fail-level", "ERROR")
    anon = APIClient(raise_request_exception=False)
    for body in ("[" * 5000 + "]" * 5000, json.dumps({"username": "a\u0000b", "password": "x"})):
        response = anon.post("/api/auth/token/", body, content_type="application/json")
        assert response.status_code == 400, response.content[:200]
