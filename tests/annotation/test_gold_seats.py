"""Issue 13.6, gold through HTTP: gold questions sit inside `hit_size` (a HIT is never longer), each
annotator draws their own gold from the pool (two accounts do not meet the same gold), and gold
positions vary from HIT to HIT. On the old engine a HIT with gold was longer than `hit_size` (the
extras were the gold), and every annotator got the same gold questions."""
from __future__ import annotations

import pytest

from annotation.models import Question
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hit_engine")]

HIT_SIZE = 4


@pytest.fixture
def campaign_with_gold(researcher, api):
    campaign = make_campaign(researcher, settings=["explicit"],
                             annotation={"hit_size": HIT_SIZE, "gold_rate": 0.5, "redundancy": 3})
    make_images(campaign, "explicit", 40)
    open_campaign(campaign)
    gold = list(Question.objects.filter(campaign=campaign).order_by("pk")[:20])
    response = api.post(f"/api/campaigns/{campaign.pk}/questions/gold/",
                        {"items": [{"question": q.pk, "answer": "Yes"} for q in gold]}, format="json")
    assert response.status_code == 200, response.content
    return campaign, {q.pk for q in gold}


def _hit(client, campaign):
    response = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
    assert response.status_code == 201, response.content
    return response.json()


def _answer(client, hit):
    response = client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": [
        {"question": q["id"], "choice": "Yes", "time_ms": 1500} for q in hit["questions"]]}, format="json")
    assert response.status_code == 200, response.content


def test_a_hit_with_gold_is_exactly_hit_size_long(campaign_with_gold):
    campaign, gold_ids = campaign_with_gold
    _, client = make_annotator("seat", campaign=campaign)
    for _ in range(4):
        hit = _hit(client, campaign)
        ids = [q["id"] for q in hit["questions"]]
        assert len(ids) == HIT_SIZE  # the old engine: hit_size real questions + gold on top
        assert len(set(ids) & gold_ids) == 2  # gold_rate 0.5 of 4 seats
        _answer(client, hit)


def test_two_annotators_get_different_gold(campaign_with_gold):
    campaign, gold_ids = campaign_with_gold
    seen = []
    for name in ("ann1", "ann2"):
        _, client = make_annotator(name, campaign=campaign)
        gold: list[int] = []
        for _ in range(3):
            hit = _hit(client, campaign)
            gold += [q["id"] for q in hit["questions"] if q["id"] in gold_ids]
            _answer(client, hit)
        assert len(gold) == len(set(gold)) == 6  # never the same gold twice
        seen.append(gold)
    # Drawn per annotator from the pool of 20: not the same questions in the same order.
    assert seen[0] != seen[1]
    assert len(set(seen[0]) & set(seen[1])) < 6


def test_gold_positions_vary(campaign_with_gold):
    campaign, gold_ids = campaign_with_gold
    patterns = set()
    for n in range(6):
        _, client = make_annotator(f"pos{n}", campaign=campaign)
        hit = _hit(client, campaign)
        patterns.add(tuple(q["id"] in gold_ids for q in hit["questions"]))
    assert len(patterns) >= 2, patterns  # gold is not always at the same seats
