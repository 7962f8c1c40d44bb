"""Regression (issue 21): marking questions gold did not change the report's cache key: the cached
report kept counting them as ordinary questions (4 questions, 0 gold answers where a fresh build gave
3 and 1). Every snapshot is keyed by the campaign's data revision and its options; each rarer
writer moves the revision in its own transaction. Through HTTP: report, gold, report."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from annotation.models import Question
from tests.builders.metrics import SMALL_PST, annotators, answer_all, campaign_with_questions, stereotyped
from tests.conftest import token_client

pytestmark = pytest.mark.django_db
REPORT = "/api/campaigns/{}/report/?n_boot=0&n_perm=0"


def _counts(api: Any, campaign_id: int) -> dict[str, Any]:
    resp = api.get(REPORT.format(campaign_id))
    assert resp.status_code == 200, resp.content
    return resp.json()["counts"]


def test_marking_gold_changes_the_cached_report(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, stereotyped, annotators(3))
    api = token_client(researcher)
    before = _counts(api, campaign.pk)
    assert before["answers_gold"] == 0
    question = Question.objects.filter(campaign=campaign).order_by("pk").first()
    assert question is not None
    resp = api.post(f"/api/campaigns/{campaign.pk}/questions/gold/",
                    {"items": [{"question": question.pk, "answer": question.choices[0]}]}, format="json")
    assert resp.status_code == 200, resp.content
    after = _counts(api, campaign.pk)
    assert after["questions"] == before["questions"] - 1
    assert after["answers_gold"] == 3
    assert after["answers"] == before["answers"] - 3
