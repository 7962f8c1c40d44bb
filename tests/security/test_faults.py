"""Faults with real processes on 127.0.0.1, bounded in time:

- the web process (gunicorn) is SIGKILLed while a submit is in flight; after a restart the
  client's retry stores exactly one submission (submit is idempotent);
- Redis is down: annotation (HIT next / submit) keeps working, generation answers 202 with the
  images recorded as pending and `unqueued` (enqueue on commit, the database is the outbox); once
  Redis is back, generate (or the sweeper, tests/generation/test_enqueue.py) queues them;
- a private PostgreSQL cluster (never the shared server) is restarted during a load run: requests
  fail cleanly (503 JSON, no stack trace), no partial submissions, and the same web process
  recovers without a restart (CONN_HEALTH_CHECKS).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
from rest_framework.authtoken.models import Token

from annotation.models import Answer, Assignment, AssignmentItem
from tests.builders.servers import PG_BIN, ROOT, free_port, private_redis, web
from tests.builders.servers import db_url as _db_url

from .conftest import World


def _hit_answers(hit: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"question": q["id"], "choice": q["choices"][0], "time_ms": 900} for q in hit["questions"]]


# --- the web process killed mid-submit -------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_web_killed_mid_submit_then_retry_stores_one_submission(world: World) -> None:
    port = free_port()
    env = {"DATABASE_URL": _db_url(), "REDIS_URL": os.environ.get("REDIS_URL", "")}
    token = Token.objects.get_or_create(user=world.a.user)[0].key
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    base = f"http://127.0.0.1:{port}"
    submit = f"/api/assignments/{world.assignment.pk}/submit/"
    with web(env, port) as proc:
        hit = requests.post(f"{base}/api/campaigns/{world.campaign.pk}/assignments/", headers=headers, timeout=10).json()
        body = json.dumps({"answers": _hit_answers(hit)}).encode()
        # send the request by hand and kill the server as soon as it is on the wire
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        raw.sendall(f"POST {submit} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                    .encode() + body)
        os.killpg(proc.pid, signal.SIGKILL)
        raw.close()
    # The restarted server on a port of its own: the killed one's port is not waited for (one CI run's restart
    # on the same port did not come up in 30 s; never reproduced here).
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with web(env, port):
        for _attempt in range(5):  # the client's retry loop
            response = requests.post(f"{base}{submit}", data=body, headers=headers, timeout=10)
            if response.status_code == 200:
                break
            time.sleep(0.5)
        assert response.status_code == 200, response.text
        again = requests.post(f"{base}{submit}", data=body, headers=headers, timeout=10)
        assert again.status_code == 200 and again.json()["duplicate"] is True
    assignment = Assignment.objects.get(pk=world.assignment.pk)
    assert assignment.status == Assignment.Status.SUBMITTED
    items = AssignmentItem.objects.filter(assignment=assignment).count()
    assert Answer.objects.filter(assignment=assignment).count() == items == len(hit["questions"])


# --- Redis down ------------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_redis_down_annotation_works_and_generation_is_queued_later(world: World) -> None:
    from campaigns.services import campaign_create
    from generation.models import Image
    from tests.conftest import GEP_MINIMAL

    spec = {**GEP_MINIMAL, "design": {"settings": ["neutral"]}}
    draft = campaign_create(owner=world.x, spec=spec)
    redis_port, port = free_port(), free_port()  # nothing listens on redis_port yet: Redis is down
    env = {"DATABASE_URL": _db_url(), "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0"}
    base = f"http://127.0.0.1:{port}"
    ann = {"Authorization": f"Token {Token.objects.get_or_create(user=world.b.user)[0].key}"}
    res = {"Authorization": f"Token {Token.objects.get_or_create(user=world.x)[0].key}"}
    with web(env, port):
        hit = requests.post(f"{base}/api/campaigns/{world.campaign.pk}/assignments/", headers=ann, timeout=30)
        assert hit.status_code == 201, hit.text
        done = requests.post(f"{base}/api/assignments/{hit.json()['id']}/submit/", headers=ann, timeout=30,
                             json={"answers": _hit_answers(hit.json())})
        assert done.status_code == 200, done.text
        started = time.monotonic()
        generate = requests.post(f"{base}/api/campaigns/{draft.pk}/generate/", headers=res, timeout=60)
        # Enqueue on commit with the database as outbox: the state change is durable and the answer
        # says that nothing reached the broker yet (the sweeper, or generate again, queues it).
        assert generate.status_code == 202, generate.text
        assert generate.json()["queued"] == 0 and generate.json()["unqueued"] == draft.images_planned
        assert "Traceback" not in generate.text and time.monotonic() - started < 45
        pending = Image.objects.filter(campaign=draft, status=Image.Status.PENDING, queued_at__isnull=True).count()
        assert pending == draft.images_planned  # recorded, waiting to be queued
        with private_redis(redis_port):
            requeued = requests.post(f"{base}/api/campaigns/{draft.pk}/generate/", headers=res, timeout=60)
            assert requeued.status_code == 202, requeued.text
            assert requeued.json()["queued"] == draft.images_planned
            import redis

            client = redis.Redis(host="127.0.0.1", port=redis_port, db=0)
            assert client.llen("generation") == requeued.json()["batches"]


# --- PostgreSQL restarted during a load run -------------------------------------------------------------
def _as_postgres(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        args = ["runuser", "-u", "postgres", "--", *args]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kwargs)


@contextmanager
def private_postgres() -> Iterator[tuple[str, int]]:
    assert PG_BIN is not None, "PostgreSQL server binaries are needed (/usr/lib/postgresql/*/bin)"
    data = Path(tempfile.mkdtemp(prefix="faults-pg-"))
    port = free_port()
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    init = _as_postgres([str(PG_BIN / "initdb"), "-D", str(data / "db"), "-A", "trust", "-U", "postgres"])
    assert init.returncode == 0, init.stderr
    ctl = [str(PG_BIN / "pg_ctl"), "-D", str(data / "db"), "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1",
           "-l", str(data / "log"), "-w"]
    try:
        started = _as_postgres([*ctl, "start"])
        assert started.returncode == 0, started.stderr
        created = _as_postgres([str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "faults"])
        assert created.returncode == 0, created.stderr
        yield str(data), port
    finally:
        _as_postgres([*ctl, "stop", "-m", "immediate"])
        shutil.rmtree(data, ignore_errors=True)


SETUP = """
from tests.conftest import make_researcher
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from rest_framework.authtoken.models import Token
import json
x = make_researcher('xavier')
c = make_campaign(x, settings=['explicit'], annotation={'hit_size': 2})
make_images(c, 'explicit', 60)
open_campaign(c)
tokens = [Token.objects.get_or_create(user=make_annotator(f'ann{i}', campaign=c)[0].user)[0].key for i in range(4)]
print(json.dumps({'campaign': c.pk, 'tokens': tokens}))
"""
CHECK = """
from annotation.models import Assignment, AssignmentItem, Answer
from django.db.models import Count
import json
bad = [a.pk for a in Assignment.objects.filter(status='submitted').annotate(
       n=Count('answers', distinct=True), k=Count('items', distinct=True)) if a.n != a.k]
orphans = Answer.objects.exclude(assignment__status='submitted').count()
print(json.dumps({'bad': bad, 'orphans': orphans, 'submitted': Assignment.objects.filter(status='submitted').count()}))
"""


def test_postgres_restart_during_load(tmp_path: Path) -> None:
    with private_postgres() as (_data, pg_port):
        url = f"postgres://postgres@127.0.0.1:{pg_port}/faults"
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "DATABASE_URL": url, "REDIS_URL": "",
               "VAR_DIR": str(tmp_path)}
        manage = [sys.executable, "manage.py"]
        migrated = subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=300)
        assert migrated.returncode == 0, migrated.stderr
        setup = subprocess.run([*manage, "shell", "-c", SETUP], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=120)
        assert setup.returncode == 0, setup.stderr
        world = json.loads(setup.stdout.strip().splitlines()[-1])
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        results: list[tuple[int, str]] = []
        stop = threading.Event()

        def annotator(token: str) -> None:
            h = {"Authorization": f"Token {token}"}
            while not stop.is_set():
                try:
                    r = requests.post(f"{base}/api/campaigns/{world['campaign']}/assignments/", headers=h, timeout=20)
                    results.append((r.status_code, r.text[:300]))
                    if r.status_code in (200, 201):
                        s = requests.post(f"{base}/api/assignments/{r.json()['id']}/submit/", headers=h, timeout=20,
                                          json={"answers": _hit_answers(r.json())})
                        results.append((s.status_code, s.text[:300]))
                    elif r.status_code == 204:
                        time.sleep(0.2)
                except requests.RequestException as exc:
                    results.append((0, str(exc)))
                time.sleep(0.05)

        with web({"DATABASE_URL": url, "REDIS_URL": "", "VAR_DIR": str(tmp_path)}, port):
            threads = [threading.Thread(target=annotator, args=(t,)) for t in world["tokens"]]
            for t in threads:
                t.start()
            time.sleep(3)
            before = len(results)
            restart = _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(Path(_data) / "db"), "restart", "-m", "fast",
                                    "-w", "-o", f"-p {pg_port} -k {_data} -c listen_addresses=127.0.0.1",
                                    "-l", str(Path(_data) / "log")])
            assert restart.returncode == 0, restart.stderr
            time.sleep(4)
            stop.set()
            for t in threads:
                t.join(timeout=30)
            # the same web process serves again (no restart)
            h = {"Authorization": f"Token {world['tokens'][0]}"}
            after = requests.get(f"{base}/api/campaigns/{world['campaign']}/task/", headers=h, timeout=20)
            assert after.status_code == 200, after.text
        statuses = [s for s, _ in results]
        assert before > 0 and len(results) > before
        assert 500 not in statuses, [r for r in results if r[0] == 500][:3]
        for status, text in results:
            assert "Traceback" not in text
            if status == 503:
                assert json.loads(text)["detail"].startswith("The service is temporarily unavailable")
        assert all(s in (200, 201, 204, 409, 503) for s in statuses), sorted(set(statuses))
        check = subprocess.run([*manage, "shell", "-c", CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=120)
        assert check.returncode == 0, check.stderr
        found = json.loads(check.stdout.strip().splitlines()[-1])
        # every submitted HIT has all its answers, no answer without a submitted HIT
        assert found["bad"] == [] and found["orphans"] == 0 and found["submitted"] > 0, found
        print(f"load run: {len(results)} requests, {statuses.count(503)} x 503 during the restart, "
              f"{found['submitted']} HITs submitted")
