"""A failed enqueue leaves nothing half-done (issue 13, point 10), and lost generation work is found
again (points 8 and 10).

The design is "enqueue on commit + a sweeper", with the database as the outbox: `generate` commits
the state change (status generating, images pending) and hands the messages to the broker after the
commit, stamping `queued_at` on the images that went. Pending images that never reached the broker,
or whose message was lost (a flushed broker, a consumer of another deployment that acknowledged it
after claiming nothing), are queued again by `generation.sweep` (Celery beat), and the campaign's
progress shows them as stalled meanwhile. The process tests use a real Redis, real workers and a
real beat; the web process is gunicorn."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation import services
from generation.models import Image
from tests.builders.campaigns import small_spec
from tests.builders.servers import free_port, private_redis, web
from tests.builders.workers import Beat, Worker, broker_reset, wait_for
from tests.builders.workers import test_database_url as database_url

S = Image.Status


@pytest.fixture
def procs(media: Path) -> Iterator[list[Worker]]:
    broker_reset()
    started: list[Worker] = []
    yield started
    for proc in started:
        proc.stop()
    broker_reset()


def _campaign(owner: User) -> Campaign:
    return campaign_create(owner=owner, spec=small_spec(name="placeholder", width=64, height=48))


def _done(campaign: Campaign) -> bool:
    campaign.refresh_from_db()
    return campaign.status == "generated" and Image.objects.filter(campaign=campaign, status=S.DONE).count() == 8


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_broker_down_at_generate_leaves_work_for_the_sweeper_and_a_worker_finishes_it(
        procs: list[Worker], researcher: User, tmp_path: Path) -> None:
    campaign = _campaign(researcher)
    redis_port, port = free_port(), free_port()  # nothing listens on redis_port: the broker is down
    broker = f"redis://127.0.0.1:{redis_port}/0"
    env = {"DATABASE_URL": database_url(), "REDIS_URL": broker, "CELERY_BROKER_URL": broker,
           "MEDIA_ROOT": str(django_settings.MEDIA_ROOT), "GENERATION_ENQUEUE_GRACE_S": "0"}
    headers = {"Authorization": f"Token {Token.objects.get_or_create(user=researcher)[0].key}"}
    base = f"http://127.0.0.1:{port}"
    with web(env, port):
        response = requests.post(f"{base}/api/campaigns/{campaign.pk}/generate/", headers=headers, timeout=60)
        # Accepted: the state change is durable, nothing reached the broker, and the answer says so.
        assert response.status_code == 202, response.text
        body = response.json()
        assert body["status"] == "generating" and body["created"] == 8
        assert body["queued"] == 0 and body["unqueued"] == 8
        assert Image.objects.filter(campaign=campaign, status=S.PENDING, queued_at__isnull=True).count() == 8
        progress = requests.get(f"{base}/api/campaigns/{campaign.pk}/", headers=headers, timeout=30).json()["progress"]
        assert progress["generation_stalled"] is True and progress["images_stalled"] == 8
        assert progress["images_unqueued"] == 8

        with private_redis(redis_port):
            # The broker is back: beat's sweeper queues the images, a worker generates them.
            proc_env = {"REDIS_URL": broker, "CELERY_BROKER_URL": broker, "GENERATION_ENQUEUE_GRACE_S": "0",
                        "GENERATION_SWEEP_INTERVAL_S": "1"}
            worker = Worker(tmp_path, env=proc_env)
            procs.append(worker)
            beat = Beat(tmp_path, env=proc_env)
            procs.append(beat)
            worker.wait_ready()
            beat.wait_ready()
            wait_for(lambda: _done(campaign), timeout=120, what="the swept images to be generated", worker=worker)
            assert "generation.sweep" in beat.text()
            progress = requests.get(f"{base}/api/campaigns/{campaign.pk}/", headers=headers,
                                    timeout=30).json()["progress"]
            assert progress["generation_stalled"] is False and progress["images_done"] == 8
    assert Image.objects.filter(campaign=campaign).count() == 8  # nothing twice


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_messages_taken_by_a_foreign_consumer_are_queued_again(procs: list[Worker], researcher: User,
                                                               tmp_path: Path, settings: Any) -> None:
    """A worker of another deployment shares the broker database: it takes our messages, finds none
    of our images in its own database and acknowledges them. Our images stay pending with no live
    message; the campaign shows them as stalled, and the sweeper queues them again."""
    campaign = _campaign(researcher)
    foreign = Worker(tmp_path, queues="generation", env={"DATABASE_URL": f"sqlite:///{tmp_path / 'foreign.sqlite3'}"})
    procs.append(foreign)
    foreign.wait_ready()
    result = services.generation_start(campaign=campaign)  # committed: the messages go out now
    assert result["queued"] == 8 and result["unqueued"] == 0
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    wait_for(lambda: foreign.text().count("generation.images_generate") >= 2 * result["batches"]
             and client.llen("generation") == 0, timeout=60, what="the foreign worker to take every message")
    foreign.stop()
    assert Image.objects.filter(campaign=campaign, status=S.PENDING).count() == 8  # nothing was generated

    settings.GENERATION_STALL_S = 1
    from campaigns.selectors import campaign_progress

    campaign.refresh_from_db()
    assert campaign.status == "generating"
    wait_for(lambda: campaign_progress(campaign=campaign)["generation_stalled"], timeout=10,
             what="the campaign to show as stalled")
    assert campaign_progress(campaign=campaign)["images_stalled"] == 8
    proc_env = {"GENERATION_STALL_S": "1", "GENERATION_SWEEP_INTERVAL_S": "1"}
    worker = Worker(tmp_path, env=proc_env)
    procs.append(worker)
    beat = Beat(tmp_path, env=proc_env)
    procs.append(beat)
    worker.wait_ready()
    beat.wait_ready()
    wait_for(lambda: _done(campaign), timeout=120, what="the re-queued images to be generated", worker=worker)
    assert campaign_progress(campaign=campaign)["generation_stalled"] is False


@pytest.mark.django_db(transaction=True)
def test_sweeper_rules(researcher: User, media: Path, settings: Any) -> None:
    """The sweeper's rules, against the real broker with no worker: images that never reached the
    broker are queued after the grace time; queued images are queued again only once they are older
    than the stall time and the generation queue is empty; stale running claims go back to pending."""
    broker_reset()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    campaign = _campaign(researcher)
    settings.GENERATION_ENQUEUE_GRACE_S = 0
    settings.GENERATION_STALL_S = 3600
    # Pending images the broker never got (as after a broker outage at commit).
    Campaign.objects.filter(pk=campaign.pk).update(status="generating")
    services.images_plan(campaign=campaign)
    assert services.generation_queue_size() == 0
    assert services.generation_sweep()["queued"] == 8
    assert client.llen("generation") == 2  # two batches of four
    assert not Image.objects.filter(campaign=campaign, queued_at__isnull=True).exists()
    # Queued recently: left alone even with an empty queue.
    client.delete("generation")
    assert services.generation_sweep()["queued"] == 0
    # Queued long ago, but the queue still holds messages: they may be waiting their turn.
    settings.GENERATION_STALL_S = 0
    client.rpush("generation", "placeholder")
    assert services.generation_queue_size() == 1
    assert services.generation_sweep()["queued"] == 0
    # The queue is empty: their messages are gone, queue them again.
    client.delete("generation")
    assert services.generation_sweep()["queued"] == 8
    # A running claim older than GENERATION_RUNNING_STALE_S goes back to pending and is queued.
    client.delete("generation")
    settings.GENERATION_STALL_S = 3600
    settings.GENERATION_RUNNING_STALE_S = 0
    Image.objects.filter(campaign=campaign).update(status=S.RUNNING, task_id="lost",
                                                   started_at=Image.objects.first().created_at)
    swept = services.generation_sweep()
    assert swept["reset"] == 8 and swept["queued"] == 8
    broker_reset()


@pytest.mark.django_db(transaction=True)
def test_large_campaigns_are_planned_and_queued_by_a_task(researcher: User, media: Path, settings: Any) -> None:
    """Above GENERATION_INLINE_MAX_IMAGES, `generate` only changes the status and queues the planning
    task: no image row is created and no batch is queued in the request."""
    broker_reset()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    settings.GENERATION_INLINE_MAX_IMAGES = 4
    campaign = _campaign(researcher)
    token = Token.objects.get_or_create(user=researcher)[0].key
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = api.post(f"/api/campaigns/{campaign.pk}/generate/")
    assert response.status_code == 202, response.content
    assert response.json()["planning"] is True and response.json()["created"] == 0
    assert response.json()["status"] == "generating"
    assert not Image.objects.filter(campaign=campaign).exists()
    assert client.llen("default") == 1 and client.llen("generation") == 0
    from generation.tasks import generation_plan

    result = generation_plan(campaign.pk)  # what the worker runs
    assert result == {"created": 8, "queued": 8, "unqueued": 0}
    assert client.llen("generation") == 2
    assert Image.objects.filter(campaign=campaign, status=S.PENDING, queued_at__isnull=False).count() == 8
    assert generation_plan(campaign.pk)["created"] == 0  # redelivered: nothing twice
    broker_reset()


@pytest.mark.django_db
def test_campaign_page_and_api_show_stalled_generation(researcher: User, media: Path, settings: Any) -> None:
    """Pending images no live task will take are shown as stalled, not as `generating` forever."""
    from django.test import Client
    from rest_framework.test import APIClient

    settings.GENERATION_ENQUEUE_GRACE_S = 0
    campaign = _campaign(researcher)
    services.images_plan(campaign=campaign)
    Campaign.objects.filter(pk=campaign.pk).update(status="generating")  # as after a broker outage at commit
    api = APIClient()
    api.force_authenticate(researcher)
    progress = api.get(f"/api/campaigns/{campaign.pk}/").json()["progress"]
    assert progress["generation_stalled"] is True and progress["images_stalled"] == 8
    page = Client()
    page.force_login(researcher)
    html = page.get(f"/console/campaigns/{campaign.pk}/").content.decode()
    assert 'id="generation-stalled">Stalled' in html and 'id="stalled-note">' in html
    # Once a worker is moving the campaign's queued images, they are waiting their turn, not stalled.
    settings.GENERATION_STALL_S = 3600
    Image.objects.filter(campaign=campaign).update(queued_at=campaign.created_at)
    progress = api.get(f"/api/campaigns/{campaign.pk}/").json()["progress"]
    assert progress["generation_stalled"] is False
    html = page.get(f"/console/campaigns/{campaign.pk}/").content.decode()
    assert 'id="generation-stalled" hidden' in html
