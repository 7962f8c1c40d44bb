"""Opening a campaign through the request work budget (annotation/services/opening.py): the request
estimates the questions to create before any is created; within REQUEST_WORK_BUDGET_S it opens in the
request (200), above it a worker opens it (202 with progress) and a second request while it runs reads
the progress instead of queueing again; a worker silent for longer than CAMPAIGN_OPEN_STALE_S is taken
as lost and replaced. The decisions are asserted, never times."""
from __future__ import annotations

import time
from typing import Any

import pytest
from django.core.cache import cache

from annotation.models import Question
from annotation.services import lifecycle, opening
from annotation.tasks import questions_open_task
from campaigns.models import Campaign
from tests.builders.campaigns import make_campaign, make_images

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[Any]]]:
    """Tasks sent by the open request; opening in the request fails the test."""
    sent: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(opening, "task_send", lambda name, args: sent.append((name, args)))
    monkeypatch.setattr(opening, "questions_open", lambda **kw: pytest.fail("opened in the request"))
    return sent


def test_the_estimate_counts_the_questions_still_to_create(researcher: Any) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "paired", 4)
    small = opening.open_estimate(campaign)
    make_images(campaign, "single", 30)
    assert opening.open_estimate(campaign).seconds > small.seconds  # more images, more questions
    assert small.seconds == pytest.approx(opening.OPEN_FIXED_S + 4 * 2 * opening.OPEN_PER_QUESTION_S)
    lifecycle.questions_open(campaign=campaign)
    assert opening.open_estimate(campaign).seconds == opening.OPEN_FIXED_S  # nothing left to create


def test_a_campaign_over_the_budget_is_opened_by_a_worker_with_progress(
        api: Any, researcher: Any, settings: Any, queued: list[tuple[str, list[Any]]],
        django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "single", 5)
    settings.REQUEST_WORK_BUDGET_S = opening.open_estimate(campaign).seconds * 0.99
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(f"/api/campaigns/{campaign.pk}/open/")
    assert resp.status_code == 202, resp.content
    body = resp.json()
    assert {k: body[k] for k in ("id", "status", "progress")} == {"id": campaign.pk, "status": "building",
                                                                   "progress": 0.0}
    token = queued[0][1][1]
    assert queued == [("annotation.questions_open", [campaign.pk, token])] and not Question.objects.filter(
        campaign=campaign).exists()
    again = api.post(f"/api/campaigns/{campaign.pk}/open/")  # while the worker runs: its progress, no new task
    assert again.status_code == 202 and len(queued) == 1 and "cannot be opened again" in again.json()["detail"]
    monkeypatch.setattr(opening, "questions_open", lifecycle.questions_open)  # the worker opens it
    seen: list[float] = []
    real_set = cache.set
    monkeypatch.setattr(opening.cache, "set", lambda k, v, **kw: seen.append(v) or real_set(k, v, **kw))
    questions_open_task.run(campaign.pk, token)  # the worker
    fractions = [v["progress"] for v in seen]
    assert fractions and fractions == sorted(fractions) and 0 < fractions[-1] < 1  # progress as the steps pass
    assert {v["token"] for v in seen} == {token}
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.OPEN and Question.objects.filter(campaign=campaign).count() == 5
    assert opening.open_progress(campaign) is None  # the claim is released
    settings.REQUEST_WORK_BUDGET_S = 5
    done = api.post(f"/api/campaigns/{campaign.pk}/open/")  # idempotent: nothing left, in the request
    assert done.status_code == 200 and done.json()["questions_created"] == 0 and done.json()["questions"] == 5


def test_a_small_campaign_opens_in_the_request(api: Any, researcher: Any) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "single", 3)
    assert opening.open_estimate(campaign).seconds < 5
    resp = api.post(f"/api/campaigns/{campaign.pk}/open/")
    assert resp.status_code == 200 and resp.json()["status"] == "open" and resp.json()["questions_created"] == 3


def test_the_console_open_action_goes_through_the_budget(client: Any, researcher: Any, settings: Any,
                                                         queued: list[tuple[str, list[Any]]],
                                                         django_capture_on_commit_callbacks: Any) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "single", 3)
    settings.REQUEST_WORK_BUDGET_S = 0
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/console/campaigns/{campaign.pk}/action/", {"action": "open"})
    assert resp.status_code == 302 and [q[1][0] for q in queued] == [campaign.pk]
    campaign.refresh_from_db()
    assert campaign.status != Campaign.Status.OPEN and opening.open_progress(campaign) == 0.0
    cache.delete(opening._claim_key(campaign))  # no worker ran in this test: its claim would outlive it


def test_a_closed_campaign_is_refused_before_any_estimate(api: Any, researcher: Any, settings: Any,
                                                          queued: list[tuple[str, list[Any]]]) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "single", 3)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    settings.REQUEST_WORK_BUDGET_S = 0  # even over the budget: a 409, never a 202 and a worker
    resp = api.post(f"/api/campaigns/{campaign.pk}/open/")
    assert resp.status_code == 409 and queued == []


def _silent_for(campaign: Campaign, seconds: float) -> None:
    """Backdate the claim's heartbeat: its worker wrote no progress for `seconds`."""
    key = opening._claim_key(campaign)
    claim = cache.get(key)
    cache.set(key, {**claim, "beat": time.time() - seconds}, timeout=60)


def test_a_lost_opening_worker_is_replaced_after_the_stale_time_not_before(
        api: Any, researcher: Any, settings: Any, queued: list[tuple[str, list[Any]]],
        django_capture_on_commit_callbacks: Any) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "single", 4)
    settings.REQUEST_WORK_BUDGET_S, settings.CAMPAIGN_OPEN_STALE_S = 0, 120
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/campaigns/{campaign.pk}/open/").status_code == 202
    lost = queued[0][1][1]
    _silent_for(campaign, 100)  # quiet, but within the stale time: still running, nothing queued
    with django_capture_on_commit_callbacks(execute=True):
        running = api.post(f"/api/campaigns/{campaign.pk}/open/")
    assert running.status_code == 202 and len(queued) == 1 and running.json()["updated_s"] >= 99
    _silent_for(campaign, 121)  # the worker died: the next request starts a new one
    with django_capture_on_commit_callbacks(execute=True):
        again = api.post(f"/api/campaigns/{campaign.pk}/open/")
    assert again.status_code == 202 and again.json()["progress"] == 0.0 and len(queued) == 2
    fresh = queued[1][1][1]
    assert queued[1][1][0] == campaign.pk and fresh != lost
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/campaigns/{campaign.pk}/open/").status_code == 202
    assert len(queued) == 2  # the new worker's claim is fresh: no third task
    cache.delete(opening._claim_key(campaign))


def test_a_superseded_worker_stops_and_leaves_the_new_claim(researcher: Any, settings: Any,
                                                             queued: list[tuple[str, list[Any]]],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "single", 3)
    settings.REQUEST_WORK_BUDGET_S = 0
    opening.campaign_open_request(campaign=campaign)
    first = cache.get(opening._claim_key(campaign))["token"]
    _silent_for(campaign, opening.open_stale_s() + 1)
    opening.campaign_open_request(campaign=campaign)  # taken over with a new token
    claim = cache.get(opening._claim_key(campaign))
    assert claim["token"] != first
    assert opening.campaign_open_run(campaign_id=campaign.pk, token=first) is None  # the lost one, redelivered
    assert not Question.objects.filter(campaign=campaign).exists()
    assert cache.get(opening._claim_key(campaign))["token"] == claim["token"]  # untouched
    monkeypatch.setattr(opening, "questions_open", lifecycle.questions_open)  # the new worker opens it
    result = opening.campaign_open_run(campaign_id=campaign.pk, token=claim["token"])
    assert result is not None and result["questions_created"] == 3 and opening.open_progress(campaign) is None


def test_closing_while_a_worker_opens_the_campaign_is_a_409_until_the_worker_is_lost(
        api: Any, researcher: Any, settings: Any, queued: list[tuple[str, list[Any]]],
        django_capture_on_commit_callbacks: Any) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "single", 3)
    settings.REQUEST_WORK_BUDGET_S = 0
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/campaigns/{campaign.pk}/open/").status_code == 202
    refused = api.post(f"/api/campaigns/{campaign.pk}/close/")
    assert refused.status_code == 409 and "being opened" in refused.json()["detail"], refused.content
    campaign.refresh_from_db()
    assert campaign.status != Campaign.Status.CLOSED
    _silent_for(campaign, opening.open_stale_s() + 1)  # the worker is lost: closing is allowed again
    assert api.post(f"/api/campaigns/{campaign.pk}/close/").status_code == 200
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.CLOSED
    cache.delete(opening._claim_key(campaign))


def test_a_campaign_closed_while_its_questions_are_created_stays_closed(researcher: Any) -> None:
    campaign = make_campaign(researcher, kind="pst")
    make_images(campaign, "single", 3)

    def close_meanwhile(fraction: float) -> None:  # e.g. a close let through after a lost worker's claim
        if fraction >= 0.3:
            Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)

    result = lifecycle.questions_open(campaign=campaign, progress=close_meanwhile)
    assert result["questions_created"] == 3
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.CLOSED  # not set open by the opening that finished after it
