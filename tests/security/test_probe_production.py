"""Issue 24: an outside-style probe run as part of the suite, production-style where it matters
(DEBUG off, the client sees a 500 as a 500 instead of an exception): ids past PostgreSQL's bigint in
every kind of URL, and hostile numbers in every query parameter that starts work (report, compare,
planning, demographics, the console's compare page). Each answer is a 4xx (or a redirect to log in),
short, never a 500."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from .conftest import World

pytestmark = pytest.mark.django_db
BIG = "9" * 25
HOSTILE = ("1e999999999999", "-1", "nan", "inf", "9" * 5000, "1e-300", "0x10", "1e10")


def _probe(client: Any, method: str, url: str) -> int:
    client.raise_request_exception = False
    response = client.post(url, {}, format="json") if method == "post" else client.get(url)
    assert response.status_code < 500, (url[:120], response.status_code, response.content[:200])
    assert len(response.content) < 200_000, url[:120]
    return response.status_code


@pytest.mark.parametrize("role", ["researcher_x", "annotator_a", "anonymous"])
def test_ids_past_bigint_are_never_a_server_error(world: World, settings: Any, role: str) -> None:
    settings.DEBUG = False
    client = world.client(role)
    c = world.campaign.pk
    for method, url in [("get", f"/api/campaigns/{BIG}/"), ("get", f"/api/campaigns/{BIG}/report/"),
                        ("post", f"/api/assignments/{BIG}/submit/"), ("post", f"/api/assignments/{BIG}/heartbeat/"),
                        ("get", f"/api/campaigns/{BIG}/demographics/"), ("get", f"/api/campaigns/{BIG}/task/"),
                        ("post", f"/api/campaigns/{BIG}/assignments/"), ("get", f"/mturk/{BIG}/"),
                        ("get", f"/prolific/{BIG}/"), ("get", f"/work/{BIG}/"), ("get", f"/api/images/{BIG}/"),
                        ("post", f"/api/qualifications/{BIG}/attempts/"), ("get", f"/api/campaigns/{c}/images/{BIG}/"),
                        ("get", f"/api/reports/compare/?campaigns={BIG},{c}")]:
        assert _probe(client, method, url) in (302, 400, 401, 403, 404, 405, 409)


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_numbers_in_work_parameters_are_400s(world: World, settings: Any, value: str) -> None:
    settings.DEBUG = False
    api = world.client("researcher_x")
    c = world.campaign.pk
    for name in ("n_boot", "n_perm", "seed", "confidence", "min_group"):
        assert _probe(api, "get", f"/api/campaigns/{c}/report/?{name}={value}") == 400, name
    assert _probe(api, "get", f"/api/campaigns/{c}/demographics/?min_group={value}") == 400
    for name in ("draws", "seed"):
        assert _probe(api, "get", f"/api/reports/compare/?campaigns={c}&{name}={value}") in (400,), name
    for name in ("target_half_width", "detect_difference"):
        spec = {"name": "p", "kind": "pst", "seed": 1, "design": {"aspect": "occupation", "settings": ["single"]},
                "backend": {"name": "placeholder"}}
        api.raise_request_exception = False
        response = api.post(f"/api/specs/preview/?{name}={value}", spec, format="json")
        assert response.status_code == 400 and name in response.json()["errors"], (name, response.content[:200])
    browser = Client(raise_request_exception=False)
    browser.force_login(world.x)
    page = browser.get(f"/console/compare/?campaigns={c}&draws={value}")
    assert page.status_code < 500, page.status_code
