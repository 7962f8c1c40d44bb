"""Issue 23: the HIT cycle's two views are JSON only (common/jsonviews.py): the same JSON for a JSON
client whatever its ordinary Accept header, no browsable API, no form bodies, JSON in the schema."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator

from annotation.apis import AssignmentNextApi, AssignmentSubmitApi
from common.jsonviews import JSONOnlyNegotiation
from tests.builders.campaigns import make_annotator

pytestmark = [pytest.mark.django_db]


def _answers(hit: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"question": q["id"], "choice": q["choices"][0], "time_ms": 900} for q in hit["questions"]]


@override_settings(THROTTLE_RATES={"annotator": "100000/minute", "anon": "100000/minute"})
def test_next_and_submit_answer_the_same_json_for_every_json_accept_header(gep_campaign: Any) -> None:
    _, client = make_annotator("jay", campaign=gep_campaign)
    url = f"/api/campaigns/{gep_campaign.pk}/assignments/"
    bodies = []
    for accept in ("", "*/*", "application/json", "application/json; q=1.0", "text/html,*/*;q=0.8"):
        response = client.post(url, HTTP_ACCEPT=accept) if accept else client.post(url)
        assert response.status_code in (200, 201), (accept, response.status_code)
        assert response["Content-Type"] == "application/json"
        bodies.append(response.content)
    assert len(set(bodies)) == 1  # the held HIT, byte for byte
    hit = json.loads(bodies[0])
    assert set(hit) >= {"id", "questions", "expires_at"}
    body = json.dumps({"answers": _answers(hit)})
    first = client.post(f"/api/assignments/{hit['id']}/submit/", body, content_type="application/json",
                        HTTP_ACCEPT="*/*")
    again = client.post(f"/api/assignments/{hit['id']}/submit/", body, content_type="application/json",
                        HTTP_ACCEPT="application/json")
    assert first.status_code == again.status_code == 200 and first["Content-Type"] == "application/json"
    assert first.json()["duplicate"] is False and again.json() == {**first.json(), "duplicate": True}


def test_no_browsable_api_and_no_form_bodies(gep_campaign: Any) -> None:
    _, client = make_annotator("kay", campaign=gep_campaign)
    url = f"/api/campaigns/{gep_campaign.pk}/assignments/"
    assert client.post(url, HTTP_ACCEPT="text/html").status_code == 406
    assert client.post(url + "?format=api").status_code == 404  # DRF: no renderer for that format
    hit = client.post(url, HTTP_ACCEPT="application/json").json()
    form = client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": "x"}, format="multipart")
    assert form.status_code == 415


def test_fast_negotiation_agrees_with_drf_on_plain_headers(rf: Any) -> None:
    from rest_framework.negotiation import DefaultContentNegotiation
    from rest_framework.renderers import JSONRenderer

    for accept in ("", "*/*", "application/json"):
        request = rf.post("/", HTTP_ACCEPT=accept) if accept else rf.post("/")
        renderers = [JSONRenderer()]
        fast = JSONOnlyNegotiation().select_renderer(request, renderers)
        request.query_params = request.GET  # what DRF's negotiation reads from its Request
        slow = DefaultContentNegotiation().select_renderer(request, renderers)
        assert (type(fast[0]), fast[1]) == (type(slow[0]), slow[1]) == (JSONRenderer, "application/json")


def test_schema_documents_the_hot_views_as_json() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = schema["paths"]
    nxt = paths["/api/campaigns/{campaign_id}/assignments/"]["post"]
    submit = paths["/api/assignments/{assignment_id}/submit/"]["post"]
    assert set(submit["requestBody"]["content"]) == {"application/json"}
    assert set(submit["responses"]["200"]["content"]) == {"application/json"}
    assert set(nxt["responses"]["201"]["content"]) == {"application/json"}
    assert AssignmentNextApi.renderer_classes == AssignmentSubmitApi.renderer_classes
