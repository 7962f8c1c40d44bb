"""Fair pay: median seconds per answer and effective hourly rates from the stored HIT times (real
timestamps of HITs taken and submitted through the engine), the floor from the spec, the suggested
reward, and the console's warning."""
from __future__ import annotations

import statistics
import time
from decimal import Decimal

import pytest

from annotation.hits import answers_submit, assignment_next
from annotation.models import Assignment
from annotation.pay import HitTime, pay_summary
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db


def test_pay_summary_figures():
    hits = [HitTime(1, 60.0, 2, Decimal("0.10")), HitTime(1, 120.0, 2, Decimal("0.10")),
            HitTime(2, 30.0, 2, Decimal("0.60")), HitTime(2, None, 2, Decimal("0.10"))]
    out = pay_summary(hits, floor=12, currency="USD", reward="0.10", reward_per="hit")
    one, two = out["annotators"]
    # Annotator 1: answers at 30, 30, 60, 60 s -> median 45 s; 0.20 USD over 180 s = 4 USD/h.
    assert one["median_seconds_per_answer"] == 45 and one["effective_hourly"] == pytest.approx(4.0)
    assert one["below_floor"] is True and one["earned"] == "0.20"
    # Annotator 2: the HIT without a time earns but adds no time: 0.70 USD over 30 s = 84 USD/h.
    assert two["effective_hourly"] == pytest.approx(84.0) and two["below_floor"] is False
    assert out["median_seconds_per_answer"] == 30  # 15, 15, 30, 30, 60, 60
    assert out["median_effective_hourly"] == pytest.approx(44.0)
    assert out["below_floor"] is False and out["suggested_reward"] is None
    # 12 USD/h x 30 s x 2 answers / 3600 = 0.20
    assert out["reward_for_floor"] == "0.20" and out["answers_per_hit"] == 2
    eur = pay_summary(hits, floor=12, currency="EUR", reward="0.10", reward_per="question")
    assert eur["below_floor"] is None and "EUR" in eur["note"] and eur["answers_per_hit"] == 1


def test_pay_from_real_hit_times_and_console_warning(researcher, api, client):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 2, "reward": "0.01", "pay_floor_usd_per_hour": 20})
    make_images(campaign, "explicit", 6)
    open_campaign(campaign)
    for name, pause in (("ann", 1.2), ("ben", 0.6)):
        annotator, _ = make_annotator(name, campaign=campaign)
        hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
        time.sleep(pause)
        answers_submit(annotator=annotator, assignment_id=hit["id"],
                       answers=[{"question": q["id"], "choice": "Yes", "time_ms": 500} for q in hit["questions"]])
    pay = api.get(f"/api/campaigns/{campaign.pk}/pay/")
    assert pay.status_code == 200, pay.content
    data = pay.json()
    stored = {a.annotator.user.username: (a.submitted_at - a.created_at).total_seconds()
              for a in Assignment.objects.select_related("annotator__user")}
    assert stored["ann"] >= 1.2 and stored["ben"] >= 0.6
    rows = {r["username"]: r for r in data["annotators"]}
    for name, seconds in stored.items():
        assert rows[name]["median_seconds_per_answer"] == pytest.approx(seconds / 2)
        assert rows[name]["effective_hourly"] == pytest.approx(0.01 / (seconds / 3600))
    assert data["median_seconds_per_answer"] == pytest.approx(statistics.median([s / 2 for s in stored.values()]))
    rates = [0.01 / (s / 3600) for s in stored.values()]
    assert data["median_effective_hourly"] == pytest.approx(statistics.median(rates))
    # 0.01 USD for ~1 s of work is ~30 USD/h: above a 20 USD/h floor.
    assert data["below_floor"] is False and data["suggested_reward"] is None
    client.force_login(researcher)
    page = client.get(f"/console/campaigns/{campaign.pk}/")
    assert page.status_code == 200 and b'id="pay-warning"' not in page.content
    # A floor above the rate: the warning and the reward that meets it.
    campaign.spec["annotation"]["pay_floor_usd_per_hour"] = 1000
    campaign.save(update_fields=["spec"])
    data = api.get(f"/api/campaigns/{campaign.pk}/pay/").json()
    expected = Decimal(str(1000 * data["median_seconds_per_answer"] * 2 / 3600)).quantize(
        Decimal("0.01"), rounding="ROUND_CEILING")
    assert data["below_floor"] is True and data["suggested_reward"] == str(expected)
    page = client.get(f"/console/campaigns/{campaign.pk}/")
    assert b'id="pay-warning"' in page.content and str(expected).encode() in page.content


def test_pay_is_the_owners(researcher, other_researcher):
    from tests.conftest import token_client

    campaign = make_campaign(researcher, settings=["explicit"])
    assert token_client(other_researcher).get(f"/api/campaigns/{campaign.pk}/pay/").status_code == 404
    _, annotator_client = make_annotator("nosy")
    assert annotator_client.get(f"/api/campaigns/{campaign.pk}/pay/").status_code == 403
