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
        "hit_size": 2, "reward": "0.01", "pay_floor_usd_per_hour": 10})
    make_images(campaign, "explicit", 6)
    open_campaign(campaign)
    for name, pause in (("ann", 2.0), ("ben", 1.2)):
        annotator, _ = make_annotator(name, campaign=campaign)
        hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
        time.sleep(pause)
        answers_submit(annotator=annotator, assignment_id=hit["id"],
                       answers=[{"question": q["id"], "choice": "Yes", "time_ms": 100} for q in hit["questions"]])
    pay = api.get(f"/api/campaigns/{campaign.pk}/pay/")
    assert pay.status_code == 200, pay.content
    data = pay.json()
    stored = {a.annotator.user.username: (a.submitted_at - a.created_at).total_seconds()
              for a in Assignment.objects.select_related("annotator__user")}
    assert stored["ann"] >= 2.0 and stored["ben"] >= 1.2
    rows = {r["username"]: r for r in data["annotators"]}
    for name, seconds in stored.items():
        assert rows[name]["median_seconds_per_answer"] == pytest.approx(seconds / 2)
        assert rows[name]["effective_hourly"] == pytest.approx(0.01 / (seconds / 3600))
    assert data["median_seconds_per_answer"] == pytest.approx(statistics.median([s / 2 for s in stored.values()]))
    rates = [0.01 / (s / 3600) for s in stored.values()]
    assert data["median_effective_hourly"] == pytest.approx(statistics.median(rates))
    # 0.01 USD for 1-2 s of work is 18-30 USD/h: above a 10 USD/h floor.
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


def test_one_time_per_answer_for_pay_and_monitor(researcher, api, client):
    """Answers sent by a script the instant the HIT was taken: the wall time is ~0, the page's time on
    screen is what measures work. Pay and the annotator monitor give the same seconds per answer, a
    rate on the same scale, and a HIT with no time at all still counts its pay."""
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 2, "reward": "0.01", "pay_floor_usd_per_hour": 12})
    make_images(campaign, "explicit", 8)
    open_campaign(campaign)
    timed, _ = make_annotator("timed", campaign=campaign)
    untimed, _ = make_annotator("untimed", campaign=campaign)
    for ms in (6000, 5000):
        hit, _ = assignment_next(annotator=timed, campaign_id=campaign.pk)
        answers_submit(annotator=timed, assignment_id=hit["id"],
                       answers=[{"question": q["id"], "choice": "Yes", "time_ms": ms} for q in hit["questions"]])
    hit, _ = assignment_next(annotator=untimed, campaign_id=campaign.pk)
    answers_submit(annotator=untimed, assignment_id=hit["id"],
                   answers=[{"question": q["id"], "choice": "No"} for q in hit["questions"]])
    data = api.get(f"/api/campaigns/{campaign.pk}/pay/").json()
    rows = {r["username"]: r for r in data["annotators"]}
    # 6 s and 5 s on screen per answer: median 5.5 s, never the ~0 s of the wall clock.
    assert rows["timed"]["median_seconds_per_answer"] == pytest.approx(5.5, abs=0.05)
    # 0.02 USD over 22 s of work: about 3.3 USD/h, not thousands.
    assert rows["timed"]["effective_hourly"] == pytest.approx(0.02 / (22 / 3600), rel=0.02)
    assert rows["untimed"]["answers"] == 2 and rows["untimed"]["earned"] == "0.01"
    assert data["below_floor"] is True
    assert Decimal(data["suggested_reward"]) >= Decimal("0.01")
    client.force_login(researcher)
    page = client.get(f"/console/campaigns/{campaign.pk}/annotators/")
    assert page.status_code == 200
    row = page.content.decode().split("<td>timed <span", 1)[1].split("</tr>", 1)[0]
    assert "5.5 s" in row, row


def test_suggested_reward_never_below_the_platform_minimum():
    hits = [HitTime(1, 0.2, 10, Decimal("0"))]  # a free HIT done in 0.2 s: 12 USD/h x 0.2 s rounds to 0.01
    out = pay_summary(hits, floor=12, currency="USD", reward="0.00", reward_per="hit")
    assert out["below_floor"] is True and out["suggested_reward"] == "0.01"
