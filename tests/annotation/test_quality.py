"""Quality control: silent gold questions, gold accuracy and auto-block (answers excluded from the
labels), fast-answer checks, the researcher's annotator table and actions."""
from __future__ import annotations

import random

import pytest

from annotation.hits import answers_submit, assignment_next
from annotation.models import AggregatedLabel, AssignmentItem, Enrollment, Question
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hit_engine")]


def _work(annotator, campaign, choose, time_ms=2000, rounds=100):
    for _ in range(rounds):
        hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk, rng=random.Random(1))
        if hit is None:
            return
        answers_submit(annotator=annotator, assignment_id=hit["id"], answers=[
            {"question": q["id"], "choice": choose(q), "time_ms": time_ms} for q in hit["questions"]])


@pytest.fixture
def gold_campaign(researcher, api):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 4, "gold_rate": 0.5, "min_gold_accuracy": 0.8, "min_gold_answers": 3,
        "low_quality_action": "block", "redundancy": 3})
    make_images(campaign, "explicit", 16)
    open_campaign(campaign)
    gold = list(Question.objects.filter(campaign=campaign).order_by("pk")[:4])
    response = api.post(f"/api/campaigns/{campaign.pk}/questions/gold/",
                        {"items": [{"question": q.pk, "answer": "Yes"} for q in gold]}, format="json")
    assert response.status_code == 200 and response.json()["gold"] == 4
    return campaign, {q.pk for q in gold}


def test_gold_is_mixed_in_silently_and_not_aggregated(gold_campaign):
    campaign, gold_ids = gold_campaign
    annotator, _ = make_annotator("gina", campaign=campaign)
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk, rng=random.Random(3))
    ids = [q["id"] for q in hit["questions"]]
    assert len(ids) == 8 and len(set(ids) & gold_ids) == 4  # rate 0.5: 4 real + 4 gold
    assert all(set(q) == {"id", "image_url", "text", "choices"} for q in hit["questions"])
    answers_submit(annotator=annotator, assignment_id=hit["id"],
                   answers=[{"question": i, "choice": "Yes", "time_ms": 1000} for i in ids])
    assert not AggregatedLabel.objects.filter(question_id__in=gold_ids).exists()
    assert AggregatedLabel.objects.filter(question__campaign=campaign).count() == 4
    # Gold counters are never touched (hot rows); real ones are.
    assert set(Question.objects.filter(pk__in=gold_ids).values_list("assigned", "completed")) == {(0, 0)}
    # Gold questions are shown to an annotator once only.
    hit2, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk, rng=random.Random(3))
    assert not set(q["id"] for q in hit2["questions"]) & gold_ids


def test_low_gold_accuracy_blocks_and_excludes_answers(gold_campaign, api):
    campaign, gold_ids = gold_campaign
    good, _ = make_annotator("good", campaign=campaign)
    bad, _ = make_annotator("bad", campaign=campaign)
    _work(bad, campaign, lambda q: "No", rounds=1)   # all gold wrong -> blocked after this HIT
    enrollment = Enrollment.objects.get(annotator=bad)
    assert enrollment.status == "blocked" and "gold accuracy" in enrollment.status_reason
    answered = set(AssignmentItem.objects.filter(annotator=bad).values_list("question_id", flat=True)) - gold_ids
    assert answered and not AggregatedLabel.objects.filter(question_id__in=answered).exists()
    response = api.post(f"/api/campaigns/{campaign.pk}/assignments/")  # researcher: not an annotator
    assert response.status_code == 403
    with pytest.raises(Exception) as err:
        assignment_next(annotator=bad, campaign_id=campaign.pk)
    assert getattr(err.value, "status_code", None) == 403
    _work(good, campaign, lambda q: "Yes", rounds=2)
    assert Enrollment.objects.get(annotator=good).status == "active"
    table = {r["username"]: r for r in api.get(f"/api/campaigns/{campaign.pk}/annotators/").json()["results"]}
    assert table["bad"]["status"] == "blocked" and table["bad"]["gold_accuracy"] == 0.0
    assert "gold accuracy" in table["bad"]["status_reason"]
    assert table["good"]["gold_accuracy"] == 1.0 and table["good"]["answers_per_minute"] == pytest.approx(30.0)
    progress = api.get(f"/api/campaigns/{campaign.pk}/").json()["progress"]
    assert progress["annotators_blocked"] == 1 and "gold accuracy" in progress["annotation_notices"][0]
    # The researcher unblocks: the answers count again.
    response = api.post(f"/api/campaigns/{campaign.pk}/annotators/{bad.pk}/", {"action": "resume"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "active"
    assert AggregatedLabel.objects.filter(question_id__in=answered).count() == len(answered)


def test_fast_answers_pause(researcher):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 5, "min_time_ms": 800, "max_fast_fraction": 0.5, "low_quality_action": "pause"})
    make_images(campaign, "explicit", 12)
    open_campaign(campaign)
    speedy, _ = make_annotator("speedy", campaign=campaign)
    _work(speedy, campaign, lambda q: "Yes", time_ms=100, rounds=2)
    enrollment = Enrollment.objects.get(annotator=speedy)
    assert enrollment.status == "paused" and "faster than 800 ms" in enrollment.status_reason
    careful, _ = make_annotator("careful", campaign=campaign)
    _work(careful, campaign, lambda q: "Yes", time_ms=3000, rounds=2)
    assert Enrollment.objects.get(annotator=careful).status == "active"


def test_agreement_in_table_and_researcher_actions(api, researcher):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 10})
    make_images(campaign, "explicit", 4)
    open_campaign(campaign)
    people = [make_annotator(n, campaign=campaign)[0] for n in ("ann", "ben", "cat")]
    _work(people[0], campaign, lambda q: "Yes")
    _work(people[1], campaign, lambda q: "Yes")
    _work(people[2], campaign, lambda q: "No")
    table = {r["username"]: r for r in api.get(f"/api/campaigns/{campaign.pk}/annotators/").json()["results"]}
    assert table["ann"]["agreement"] == 1.0 and table["cat"]["agreement"] == 0.0
    assert table["cat"]["answers"] == 4 and table["cat"]["hits_submitted"] == 1
    url = f"/api/campaigns/{campaign.pk}/annotators/{people[2].pk}/"
    assert api.post(url, {"action": "pause", "reason": "check"}, format="json").json()["status"] == "paused"
    assert api.post(url, {"action": "block"}, format="json").json()["status"] == "blocked"
    assert api.post(url, {"action": "explode"}, format="json").status_code == 400
    assert api.post(f"/api/campaigns/{campaign.pk}/annotators/999999/", {"action": "pause"},
                    format="json").status_code == 404
