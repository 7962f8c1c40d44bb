"""Issue 24, "Gold that collusion cannot find": groups of 2, 3 and 5 colluding accounts compare the
HITs they are given (through the API); among the questions that differ between their HITs, the
share of gold must be the campaign's gold rate within three standard errors. (Before: real questions
came in the same pool order for everyone and gold differed per annotator, so every differing
question was gold.) Real-question order also differs per annotator."""
from __future__ import annotations

import math

import pytest
from django.contrib.auth.models import User

from annotation.models import Question
from annotation.services.lifecycle import questions_gold_set
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db

GOLD_RATE = 0.2
TRIALS = 12


def test_colluding_accounts_cannot_tell_gold_from_real_questions(researcher: User) -> None:
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 10, "redundancy": 9, "gold_rate": GOLD_RATE})
    make_images(campaign, "explicit", 200)
    campaign = open_campaign(campaign)
    questions = list(Question.objects.filter(campaign=campaign).order_by("pk"))
    gold = {q.pk for q in questions[:12]}
    questions_gold_set(campaign=campaign, items=[{"question": pk, "answer": "Yes"} for pk in sorted(gold)])
    orders = set()
    for size in (2, 3, 5):
        differing = gold_differing = 0
        for trial in range(TRIALS):
            hits = []
            for member in range(size):
                _, client = make_annotator(f"c{size}-{trial}-{member}", campaign=campaign)
                hit = client.post(f"/api/campaigns/{campaign.pk}/assignments/", format="json").json()
                ids = [q["id"] for q in hit["questions"]]
                assert len(ids) == 10
                orders.add(tuple(i for i in ids if i not in gold))
                hits.append(set(ids))
            differ = set.union(*hits) - set.intersection(*hits)
            differing += len(differ)
            gold_differing += len(differ & gold)
        share = gold_differing / differing
        se = math.sqrt(GOLD_RATE * (1 - GOLD_RATE) / differing)
        # Three binomial standard errors: the result is a fixed function of the question and annotator ids
        # (their md5 orders), which move with every test that ran before. 25 id layouts gave |z| < 1.5 for
        # every group size, one CI run's layout gave z = -2.3 for pairs; the old engine's share was 1.0
        # (every differing question gold), over 20 standard errors away.
        assert abs(share - GOLD_RATE) <= 3 * se, (size, share, differing, se)
    assert len(orders) > 1  # real questions do not come in one order for everyone
