"""Adaptive redundancy wherever answers change (issue 21): a correction or a blocked annotator
re-evaluates `required` (not only a submit), and an empty HIT request says whether more may come:
204 with `Retry-After` while answers in flight may reopen a question, a plain 204 once finished.
Through HTTP, both HIT engines."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from annotation.models import Answer, Question
from annotation.selectors import HIT_RETRY_AFTER_S
from annotation.services.answers import answer_correct
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from tests.conftest import token_client

pytestmark = pytest.mark.django_db
ADAPTIVE = {"min": 2, "max": 4, "rule": "confidence", "threshold": 0.75}


def _one_question(researcher: User) -> tuple[Any, Question]:
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 1, "redundancy": ADAPTIVE})
    make_images(campaign, "explicit", 1)
    campaign = open_campaign(campaign)
    return campaign, Question.objects.get(campaign=campaign)


def _take(client: Any, campaign_id: int) -> Any:
    return client.post(f"/api/campaigns/{campaign_id}/assignments/")


def _answer(client: Any, hit: dict[str, Any], choice: str) -> None:
    resp = client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": [
        {"question": q["id"], "choice": choice, "time_ms": 1500} for q in hit["questions"]]}, format="json")
    assert resp.status_code == 200, resp.content


def test_nothing_for_now_is_a_204_with_retry_after_and_finished_is_a_plain_204(researcher: User,
                                                                                  hit_engine: str) -> None:
    campaign, question = _one_question(researcher)
    (amy, a), (bob, b), (cid, c) = (make_annotator(n, campaign=campaign) for n in ("amy", "bob", "cid"))
    h1, h2 = _take(a, campaign.pk), _take(b, campaign.pk)
    assert h1.status_code == h2.status_code == 201
    waiting = _take(c, campaign.pk)
    assert waiting.status_code == 204 and waiting["Retry-After"] == str(HIT_RETRY_AFTER_S)
    _answer(a, h1.json(), "Yes")
    _answer(b, h2.json(), "No")  # 1-1: one more answer wanted
    reopened = _take(c, campaign.pk)
    assert reopened.status_code == 201 and reopened.json()["questions"][0]["id"] == question.pk
    _answer(c, reopened.json(), "Yes")  # 2-1 is not settled at 0.75: required 4
    dee = make_annotator("dee", campaign=campaign)[1]
    last = _take(dee, campaign.pk)
    assert last.status_code == 201
    _answer(dee, last.json(), "Yes")  # max reached
    done = _take(make_annotator("eve", campaign=campaign)[1], campaign.pk)
    assert done.status_code == 204 and "Retry-After" not in done
    # A fixed design never says "later".
    fixed = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 1, "redundancy": 1})
    make_images(fixed, "explicit", 1)
    fixed = open_campaign(fixed)
    assert _take(make_annotator("fay", campaign=fixed)[1], fixed.pk).status_code == 201
    empty = _take(make_annotator("gus", campaign=fixed)[1], fixed.pk)
    assert empty.status_code == 204 and "Retry-After" not in empty


def test_a_correction_reopens_a_settled_question(researcher: User, hit_engine: str) -> None:
    campaign, question = _one_question(researcher)
    (amy, a), (bob, b), (cid, c) = (make_annotator(n, campaign=campaign) for n in ("amy", "bob", "cid"))
    h1, h2 = _take(a, campaign.pk).json(), _take(b, campaign.pk).json()
    _answer(a, h1, "Yes")
    _answer(b, h2, "Yes")
    question.refresh_from_db()
    assert question.required == 2 and _take(c, campaign.pk).status_code == 204
    answer_correct(answer_id=Answer.objects.get(question=question, annotator=bob).pk, choice="No")
    question.refresh_from_db()
    assert question.required == 3  # 1-1 after the correction
    assert _take(c, campaign.pk).status_code == 201


def test_blocking_an_annotator_reopens_the_questions_they_settled(researcher: User, hit_engine: str) -> None:
    campaign, question = _one_question(researcher)
    (amy, a), (bob, b), (cid, c) = (make_annotator(n, campaign=campaign) for n in ("amy", "bob", "cid"))
    h1, h2 = _take(a, campaign.pk).json(), _take(b, campaign.pk).json()
    _answer(a, h1, "Yes")
    _answer(b, h2, "Yes")
    assert _take(c, campaign.pk).status_code == 204
    api = token_client(researcher)
    resp = api.post(f"/api/campaigns/{campaign.pk}/annotators/{bob.pk}/", {"action": "block"}, format="json")
    assert resp.status_code == 200, resp.content
    question.refresh_from_db()
    assert question.required == 3  # bob's vote no longer counts: one answer is not settled
    assert _take(c, campaign.pk).status_code == 201
