"""The documented responses are the real ones (issue 21, typed contracts): a campaign walked through
the API, from the preview to the report, and every JSON body checked against its operation's output
serializer in the OpenAPI schema: each documented required key is returned and no returned key is
undocumented (top level, list rows and nested documented objects)."""
from __future__ import annotations

import copy
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Question
from tests.builders.campaigns import hit_submit_all, make_annotator, make_campaign, make_images, small_spec
from tests.builders.schema import openapi_schema, response_problems
from tests.conftest import PST_MINIMAL

pytestmark = pytest.mark.django_db


class Checked:
    """An API client that records how every JSON response strays from its documentation."""

    def __init__(self, client: APIClient, schema: dict[str, Any], problems: list[str], seen: set[str]) -> None:
        self.client, self.schema, self.problems, self.seen = client, schema, problems, seen

    def call(self, method: str, url: str, data: Any = None, expect: int | None = None) -> Any:
        resp = getattr(self.client, method)(url, data, format="json") if data is not None else \
            getattr(self.client, method)(url)
        assert resp.status_code < 300, (method, url, resp.status_code, resp.content[:400])
        assert expect is None or resp.status_code == expect, (url, resp.status_code)
        if resp.status_code != 204 and resp["Content-Type"].startswith("application/json"):
            body = resp.json()
            self.problems.extend(response_problems(self.schema, method, url, resp.status_code, body))
            self.seen.add(f"{method.upper()} {url}")
            return body
        return None


def test_responses_have_exactly_the_documented_keys(researcher: User, api: APIClient) -> None:
    schema = openapi_schema()
    problems: list[str] = []
    seen: set[str] = set()
    r = Checked(api, schema, problems, seen)
    r.call("get", "/api/presets/")
    r.call("post", "/api/specs/preview/?target_half_width=10", small_spec())
    campaign = make_campaign(researcher, annotation={"redundancy": 2, "hit_size": 4})
    base = f"/api/campaigns/{campaign.pk}"
    r.call("get", f"{base}/spec/")
    r.call("post", f"{base}/generate/cancel/")
    images = make_images(campaign, "neutral", 4)
    opened = r.call("post", f"{base}/open/")
    assert opened["questions"] > 0
    questions = r.call("get", f"{base}/questions/")["results"]
    r.call("post", f"{base}/questions/redundancy/", {"required": 2, "questions": [questions[-1]["id"]]})
    r.call("post", f"{base}/questions/gold/", {"items": [{"question": questions[0]["id"],
                                                          "answer": questions[0]["choices"][0]}]})
    r.call("post", f"{base}/examples/", {"family": r.call("get", f"{base}/examples/")["families"][0],
                                         "image": images[0].pk, "answer": "Yes", "caption": "an example"})
    r.call("get", f"{base}/examples/")
    r.call("get", f"{base}/qualifications/")
    r.call("post", f"{base}/pause/")
    r.call("post", f"{base}/resume/")
    for name in ("kim", "lee"):
        annotator, client = make_annotator(name)
        a = Checked(client, schema, problems, seen)
        a.call("get", "/api/annotators/me/")
        a.call("post", f"{base}/consent/", {"consent": True})
        a.call("get", f"{base}/task/")
        a.call("get", f"{base}/demographics/")
        a.call("get", f"{base}/qualifications/")
        hit = a.call("post", f"{base}/assignments/", expect=201)
        assert a.call("post", f"{base}/assignments/", expect=200)["id"] == hit["id"]
        a.call("post", f"/api/assignments/{hit['id']}/heartbeat/")
        resp = hit_submit_all(client, hit)
        problems.extend(response_problems(schema, "post", f"/api/assignments/{hit['id']}/submit/",
                                          resp.status_code, resp.json()))
        r.call("post", f"/api/assignments/{hit['id']}/review/", {"action": "approve"})
        a.call("post", "/api/annotators/me/demographics/withdraw/", {})
    r.call("get", f"{base}/annotators/")
    r.call("post", f"{base}/annotators/{annotator.pk}/", {"action": "pause", "reason": "checking"})
    r.call("get", f"{base}/pay/")
    r.call("get", f"{base}/demographics/")
    report = r.call("get", f"{base}/report/?n_boot=0&n_perm=0")
    assert report["campaign"]["id"] == campaign.pk
    r.call("get", f"/api/reports/compare/?campaigns={campaign.pk}&n_boot=0")
    r.call("get", "/api/schema/report/")
    pst = make_campaign(researcher, kind="pst")
    r.call("get", f"/api/campaigns/{pst.pk}/references/")
    r.call("post", f"{base}/close/")
    assert not problems, "\n".join(problems)
    assert len(seen) >= 30


def test_more_responses_have_the_documented_keys(researcher: User, api: APIClient) -> None:
    """Sign-up, profile, qualification tests, a returned HIT, machine labels, a report from them."""
    schema = openapi_schema()
    problems: list[str] = []
    seen: set[str] = set()
    r = Checked(api, schema, problems, seen)
    anon = Checked(APIClient(), schema, problems, seen)
    anon.call("post", "/api/annotators/", {"username": "sam", "password": "sam-Secret-pass-9", "consent": True},
              expect=201)
    campaign = make_campaign(researcher, annotation={"redundancy": 2, "hit_size": 4})
    base = f"/api/campaigns/{campaign.pk}"
    images = make_images(campaign, "neutral", 4)
    r.call("post", f"{base}/open/")
    family = r.call("get", f"{base}/questions/")["results"][0]["family"]
    qual = r.call("post", f"{base}/qualifications/", {"family": family, "items": [
        {"image": i.pk, "correct": "Yes"} for i in images[:2]]}, expect=201)
    annotator, client = make_annotator("tam", campaign=campaign)
    a = Checked(client, schema, problems, seen)
    a.call("patch", "/api/annotators/me/", {"prolific_pid": "", "mturk_worker_id": ""})
    a.call("post", f"/api/qualifications/{qual['id']}/attempts/", {"answers": ["Yes", "Yes"]}, expect=201)
    hit = a.call("post", f"{base}/assignments/", expect=201)
    a.call("post", f"/api/assignments/{hit['id']}/return/")
    a.call("delete", "/api/annotators/me/demographics/")
    lines = ["image,attribute,choice,score,model"] + [
        f"{q.image_id},{q.slot},Yes,0.5,ext-model" for q in Question.objects.filter(campaign=campaign)]
    resp = api.post(f"{base}/machine-labels/import/", {"labeller": "ext", "file": SimpleUploadedFile(
        "labels.csv", ("\n".join(lines) + "\n").encode())}, format="multipart")
    assert resp.status_code == 201, resp.content
    problems.extend(response_problems(schema, "post", f"{base}/machine-labels/import/", 201, resp.json()))
    report = r.call("get", f"{base}/report/?n_boot=0&n_perm=0&source=hybrid:ext")
    assert report["source"]["labeller"] == "ext"
    assert not problems, "\n".join(problems)
    assert len(seen) >= 9


def test_the_check_sees_an_undocumented_key(api: APIClient) -> None:
    """Not vacuous: a returned key the output serializer does not name, or a missing required one."""
    schema = openapi_schema()
    body = {"id": 1, "status": "open", "questions_created": 0, "questions": 1}
    url = "/api/campaigns/1/open/"
    assert response_problems(schema, "post", url, 200, body) == []
    assert response_problems(schema, "post", url, 200, {**body, "surprise": 1}) == \
        ["POST /api/campaigns/1/open/ 200: .surprise: returned, not documented"]
    assert response_problems(schema, "post", url, 200, {"id": 1, "status": "open", "questions": 1}) == \
        ["POST /api/campaigns/1/open/ 200: .questions_created: documented as required, not returned"]
    assert copy.deepcopy(PST_MINIMAL)["kind"] == "pst"
