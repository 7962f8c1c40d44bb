"""A submit that also takes the next HIT (`"next": true`): the response's `next` is what POST
/api/campaigns/{id}/assignments/ would have answered (a new HIT, the held one, nothing for now,
nothing left, or its error), taken after the answers are committed; without the key the response is
the submit's alone; a bad `next` is refused before anything is stored."""
from __future__ import annotations

from typing import Any

import pytest

from annotation import selectors
from annotation.models import Answer, Assignment, AssignmentItem
from annotation.services.lifecycle import campaign_annotation_transition
from tests.builders.campaigns import make_annotator

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hit_engine")]
SUBMIT_KEYS = {"id", "status", "answers", "submitted_at", "reward", "duplicate"}


def _hit(client: Any, campaign: Any) -> tuple[int, dict[str, Any]]:
    response = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
    return response.status_code, response.json() if response.status_code != 204 else {}


def _answers(hit: dict[str, Any], choice: str = "Yes") -> list[dict[str, Any]]:
    return [{"question": q["id"], "choice": choice, "time_ms": 900} for q in hit["questions"]]


def _submit(client: Any, hit: dict[str, Any], **extra: Any) -> Any:
    return client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": _answers(hit), **extra}, format="json")


def test_next_is_the_hit_the_next_request_would_give_and_it_is_leased(gep_campaign: Any, worker: Any) -> None:
    annotator, client = worker
    code, first = _hit(client, gep_campaign)
    assert code == 201
    response = _submit(client, first, next=True)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == SUBMIT_KEYS | {"next"}
    assert body["status"] == "submitted" and body["answers"] == 2 and body["duplicate"] is False
    nxt = body["next"]
    assert nxt["status"] == 201 and nxt["retry_after"] is None and "detail" not in nxt
    hit = nxt["hit"]
    assert hit["id"] != first["id"] and len(hit["questions"]) == 2
    assert not {q["id"] for q in hit["questions"]} & {q["id"] for q in first["questions"]}
    # A real lease: the HIT is active with its items, and asking again hands back the same one (200).
    assert Assignment.objects.get(pk=hit["id"]).status == Assignment.Status.ACTIVE
    assert AssignmentItem.objects.filter(assignment_id=hit["id"], status="leased").count() == 2
    code, held = _hit(client, gep_campaign)
    assert code == 200 and held == hit
    # The first HIT's answers were stored.
    assert Answer.objects.filter(annotator=annotator, assignment_id=first["id"]).count() == 2


def test_the_held_hit_comes_back_with_status_200(gep_campaign: Any, worker: Any) -> None:
    _, client = worker
    _, first = _hit(client, gep_campaign)
    _, other = _hit(client, gep_campaign)  # the same HIT, held
    assert other == first
    # Submitting it frees the annotator: the next is a new HIT. Resending the same answers (a retry after
    # a lost response) is a duplicate, and its `next` is the HIT the first submit leased: held, 200.
    body = _submit(client, first, next=True).json()
    assert body["next"]["status"] == 201
    again = _submit(client, first, next=True).json()
    assert again["duplicate"] is True
    assert again["next"]["status"] == 200 and again["next"]["hit"] == body["next"]["hit"]


def test_nothing_left_is_204_with_no_retry(gep_campaign: Any, worker: Any) -> None:
    _, client = worker
    _, hit = _hit(client, gep_campaign)
    statuses = []
    for _ in range(3):  # 6 questions, HITs of 2: the third submit leaves nothing for this annotator
        body = _submit(client, hit, next=True).json()
        statuses.append(body["next"]["status"])
        hit = body["next"]["hit"]
    assert statuses == [201, 201, 204]
    assert body["next"] == {"status": 204, "hit": None, "retry_after": None}
    assert _hit(client, gep_campaign)[0] == 204


def test_nothing_for_now_carries_the_retry_after_of_the_204(gep_campaign: Any, worker: Any, monkeypatch: Any) -> None:
    _, client = worker
    monkeypatch.setattr(selectors, "hit_retry_after", lambda **_: 7)
    _, hit = _hit(client, gep_campaign)
    for _ in range(2):
        hit = _submit(client, hit, next=True).json()["next"]["hit"]
    assert _submit(client, hit, next=True).json()["next"] == {"status": 204, "hit": None, "retry_after": 7}


def test_an_error_of_the_next_request_is_its_status_and_body_and_the_answers_stay(
        gep_campaign: Any, worker: Any) -> None:
    annotator, client = worker
    _, hit = _hit(client, gep_campaign)
    campaign_annotation_transition(campaign=gep_campaign, action="pause")  # live HITs may still be submitted
    response = _submit(client, hit, next=True)
    assert response.status_code == 200, response.content
    nxt = response.json()["next"]
    plain = client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/")
    assert plain.status_code == 409
    assert nxt == {"status": 409, "hit": None, "retry_after": None, **plain.json()}
    assert "paused" in nxt["detail"]
    assert Answer.objects.filter(annotator=annotator).count() == 2
    assert Assignment.objects.get(pk=hit["id"]).status == Assignment.Status.SUBMITTED


def test_without_next_the_response_is_the_submits_alone(gep_campaign: Any, worker: Any) -> None:
    _, client = worker
    _, hit = _hit(client, gep_campaign)
    body = _submit(client, hit, next=False).json()
    assert set(body) == SUBMIT_KEYS
    assert _hit(client, gep_campaign)[0] == 201  # no HIT was leased by the submit


@pytest.mark.parametrize("bad", ["yes", 1, None, [], {"campaign": 1}])
def test_a_next_that_is_not_a_boolean_is_refused_before_anything_is_stored(gep_campaign: Any, worker: Any,
                                                                          bad: Any) -> None:
    annotator, client = worker
    _, hit = _hit(client, gep_campaign)
    response = _submit(client, hit, next=bad)
    assert response.status_code == 400
    assert response.json()["errors"] == {"next": ["must be true or false"]}
    assert not Answer.objects.filter(annotator=annotator).exists()
    assert Assignment.objects.get(pk=hit["id"]).status == Assignment.Status.ACTIVE


def test_the_next_hit_is_from_the_submitted_hits_campaign_for_its_annotator(gep_campaign: Any, worker: Any) -> None:
    _, client = worker
    other, other_client = make_annotator("otto", campaign=gep_campaign)
    _, hit = _hit(client, gep_campaign)
    nxt = _submit(client, hit, next=True).json()["next"]["hit"]
    assert Assignment.objects.get(pk=nxt["id"]).campaign_id == gep_campaign.pk
    assert Assignment.objects.get(pk=nxt["id"]).annotator.user.username == "wanda"
    # Another annotator cannot submit it (404, as without `next`), and gets no HIT from trying.
    response = other_client.post(f"/api/assignments/{nxt['id']}/submit/", {"answers": _answers(nxt), "next": True},
                                 format="json")
    assert response.status_code == 404
    assert not Assignment.objects.filter(annotator=other).exists()
