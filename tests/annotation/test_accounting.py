"""Accounting: rewards per HIT or per question, review (approve / reject with reason / bonus),
auto-approval after the delay, and the payments CSV."""
from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.hits import answers_submit, assignment_next
from annotation.models import Assignment
from annotation.services.annotators import annotator_update
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db


def _one_hit(annotator, campaign):
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    answers_submit(annotator=annotator, assignment_id=hit["id"],
                   answers=[{"question": q["id"], "choice": "Yes", "time_ms": 1200} for q in hit["questions"]])
    return hit


def test_rewards_review_auto_approve_and_payments_csv(api, researcher):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 2, "reward": "0.05", "reward_per": "question", "auto_approve_hours": 24})
    make_images(campaign, "explicit", 6)
    open_campaign(campaign)
    amy, _ = make_annotator("amy", campaign=campaign)
    annotator_update(annotator=amy, mturk_worker_id="A1MTURK", prolific_pid="P123")
    bob, _ = make_annotator("bob", campaign=campaign)
    h1, h2 = _one_hit(amy, campaign), _one_hit(amy, campaign)
    h3 = _one_hit(bob, campaign)
    assert Assignment.objects.get(pk=h1["id"]).reward == Decimal("0.10")
    review = api.post(f"/api/assignments/{h1['id']}/review/", {"action": "approve", "bonus": "0.50"}, format="json")
    assert review.status_code == 200 and review.json()["review"] == "approved" and review.json()["bonus"] == "0.50"
    no_reason = api.post(f"/api/assignments/{h2['id']}/review/", {"action": "reject"}, format="json")
    assert no_reason.status_code == 400 and "reason" in no_reason.json()["errors"]
    rejected = api.post(f"/api/assignments/{h2['id']}/review/", {"action": "reject", "reason": "random clicking"},
                        format="json")
    assert rejected.json()["review"] == "rejected"
    # bob's HIT is old enough to be auto-approved: the tables count it as approved at once, without
    # writing (a GET writes nothing); the beat task stores the approval, and the figures stay the same.
    Assignment.objects.filter(pk=h3["id"]).update(submitted_at=timezone.now() - timedelta(hours=25))

    def payments():
        response = api.get(f"/api/campaigns/{campaign.pk}/payments.csv")
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        return {r["username"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}

    rows = payments()
    assert rows["amy"] == {"annotator": str(amy.pk), "username": "amy", "mturk_worker_id": "A1MTURK",
                           "prolific_pid": "P123", "hits": "2", "approved": "1", "rejected": "1",
                           "reward_total": "0.10", "bonus_total": "0.50", "currency": "USD"}
    assert rows["bob"]["approved"] == "1" and rows["bob"]["reward_total"] == "0.10"
    assert Assignment.objects.get(pk=h3["id"]).review == "pending"
    from annotation.tasks import assignments_auto_approve_task

    assert assignments_auto_approve_task() == 1
    stored = Assignment.objects.get(pk=h3["id"])
    assert stored.review == "approved" and stored.review_reason == "auto-approved"
    assert payments() == rows


def test_auto_approve_task_and_reward_per_hit(researcher):
    from annotation.tasks import assignments_auto_approve_task

    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 3, "reward": "0.30",
                                                                            "auto_approve_hours": 1})
    make_images(campaign, "explicit", 3)
    open_campaign(campaign)
    amy, _ = make_annotator("amy", campaign=campaign)
    hit = _one_hit(amy, campaign)
    assert Assignment.objects.get(pk=hit["id"]).reward == Decimal("0.30")
    assert assignments_auto_approve_task() == 0
    Assignment.objects.filter(pk=hit["id"]).update(submitted_at=timezone.now() - timedelta(hours=2))
    assert assignments_auto_approve_task() == 1
    assert Assignment.objects.get(pk=hit["id"]).review == "approved"


def test_payments_and_table_are_owner_only(api, researcher, other_researcher):
    from tests.conftest import token_client

    campaign = make_campaign(researcher, settings=["explicit"])
    other = token_client(other_researcher)
    assert other.get(f"/api/campaigns/{campaign.pk}/payments.csv").status_code == 404
    assert other.get(f"/api/campaigns/{campaign.pk}/annotators/").status_code == 404
