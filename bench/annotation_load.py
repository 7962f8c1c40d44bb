"""Benchmark: the annotation API under load, served by uWSGI (the deployment's config/uwsgi.ini; or gunicorn,
`--servers 4`) against PostgreSQL, driven by N
simulated annotators (asyncio + httpx) on loopback, with the database checked afterwards.

Each annotator loops: POST /api/campaigns/{id}/assignments/ (a HIT), think, POST
/api/assignments/{id}/submit/ (valid answers). The `-chained` scenarios send `"next": true` with the
submit and take the next HIT from its answer, as the work page does: one request per cycle.
Annotators, their API tokens and consents are bulk-created before a run; the campaign's pool (GEP
neutral images, 15 questions per image, R = 3) is bulk-loaded with COPY. The same clients are also
run against GET /bench/trivial/ (one indexed query through the same stack: bench/urls.py) as the
ceiling of this stack on this machine.
The load generator and the server share the machine's cores.

After each HIT run the database is checked: no question over-assigned (assigned <= required, and
distinct annotators per question <= required), no duplicate (question, annotator), counters
consistent with the lease and answer rows, and answers stored == answers acknowledged by 200s.

Needs PostgreSQL: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench_load; created if
missing; its campaigns are wiped at the start of a run).

    .venv/bin/python bench/annotation_load.py                 # the full run (~6 minutes)
    .venv/bin/python bench/annotation_load.py --smoke         # seconds (CI smoke test)
    .venv/bin/python bench/annotation_load.py --servers u4,4,3x4 --scenarios hit --ns 200  # uWSGI, gunicorn sync, gthread
"""
from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import resource
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import ROOT, start  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_load"
TICKS = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------
# Data: annotators with tokens, campaigns with a COPY-loaded pool
# ---------------------------------------------------------------------------------------------
def reset() -> None:
    """Wipe the benchmark database: its users (bench owner and annotators), campaigns, and everything
    hanging off them. The database is the benchmark's own."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("TRUNCATE auth_user, campaigns_campaign CASCADE")


def annotators_create(n: int) -> list[tuple[int, str]]:
    """n annotators with API tokens, in bulk: [(annotator id, token)]."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from annotation.models import Annotator

    users = User.objects.bulk_create([User(username=f"bench-a{i}", password="!") for i in range(n)])
    annotators = Annotator.objects.bulk_create([Annotator(user=u) for u in users])
    tokens = Token.objects.bulk_create([Token(key=secrets.token_hex(20), user=u) for u in users])
    return [(a.pk, t.key) for a, t in zip(annotators, tokens, strict=True)]


def campaign_load(*, questions: int, hit_size: int, annotator_ids: list[int], seed: int = 0) -> tuple[int, int]:
    """A GEP neutral campaign, open, with about `questions` questions (15 per image, R = 3) loaded
    with COPY, and every given annotator consented. Returns (campaign id, questions)."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.utils import timezone

    from annotation.models import Enrollment
    from campaigns.models import Campaign
    from campaigns.services import campaign_create, campaign_status_set

    owner, _ = User.objects.get_or_create(username="bench-owner", defaults={"is_staff": True})
    samples = max(1, -(-questions // (15 * 32)))
    campaign = campaign_create(owner=owner, spec={
        "name": f"bench-load-{time.time_ns()}", "kind": "gep", "seed": seed,
        "design": {"settings": ["neutral"], "samples": samples}, "backend": {"name": "placeholder"},
        "annotation": {"redundancy": 3, "hit_size": hit_size}})
    rng = random.Random(seed)
    attrs = [(a["name"], a.get("phrase", a["name"])) for a in campaign.spec["design"]["attributes"]]
    prompts = list(campaign.prompts.values_list("id", "seeds"))
    with connection.cursor() as cur:
        raw = cur.connection
        buf = io.StringIO()
        for pid, seeds in prompts:
            for s, sd in enumerate(seeds):
                buf.write(f"{campaign.pk}\t{pid}\t{s}\t{sd}\tdone\t\t0\t\t\\N\t\timages/{pid}-{s}.webp\t\t\\N\t\\N\t"
                          f"\tplaceholder\t\t\t{{}}\t\\N\t\tt\tf\t\tnow\tnow\tnow\n")
        with raw.cursor().copy(
                "COPY generation_image (campaign_id, prompt_id, sample_index, seed, status, error, attempts, task_id, "
                "started_at, file, web_file, sha256, width, height, source_url, backend, model, revision, params, "
                "wall_time_s, revised_prompt, synthetic, excluded, exclusion_reason, created_at, updated_at, "
                "finished_at) FROM STDIN") as copy:
            copy.write(buf.getvalue())
        cur.execute("SELECT id FROM generation_image WHERE campaign_id = %s ORDER BY id", [campaign.pk])
        images = [r[0] for r in cur.fetchall()]
        buf = io.StringIO()
        for image_id in images:
            for name, phrase in attrs:
                md = json.dumps({"setting": "neutral", "attribute": name, "sample_index": 0})
                buf.write(f"{campaign.pk}\t{image_id}\t{name}\tattribute:{name}\tneutral\t"
                          f"Do you see a person {phrase}?\t[\"Yes\", \"No\"]\t{md}\t3\t0\t0\t"
                          f"{rng.randrange(2**62)}\tf\t\tnow\n")
        with raw.cursor().copy(
                "COPY annotation_question (campaign_id, image_id, slot, family, setting, text, choices, metadata, "
                "required, assigned, completed, order_key, is_gold, gold_answer, created_at) FROM STDIN") as copy:
            copy.write(buf.getvalue())
        # Only the tables just loaded. The tables the run writes are empty now (TRUNCATE left their size
        # unknown); analysed empty, the plans each server connection caches at its first HIT, the
        # foreign keys' per-row checks included, would take them for empty for the whole run (this
        # machine runs PostgreSQL with autovacuum off, so nothing analyses them again) and scan every
        # Assignment for each answer and lease row written: ~20 scans per HIT cycle, growing with the run
        # (bench/README.md section 1). A server in use has these tables analysed with their rows.
        cur.execute("ANALYZE generation_image, annotation_question")
        n_questions = cur.execute("SELECT count(*) FROM annotation_question WHERE campaign_id = %s",
                                  [campaign.pk]).fetchone()[0]
    now = timezone.now()
    Enrollment.objects.bulk_create([Enrollment(campaign=campaign, annotator_id=a, consented_at=now,
                                               consent_text="bench") for a in annotator_ids])
    with connection.cursor() as cur:  # what autovacuum would do for a table that just grew
        cur.execute("ANALYZE annotation_enrollment")
    campaign_status_set(campaign=campaign, status=Campaign.Status.OPEN)
    return campaign.pk, n_questions


def integrity(campaign_id: int, acknowledged: int) -> dict[str, Any]:
    """Violations found in the database after a run (all zero when the engine kept its promises)."""
    from django.db import connection

    checks = {
        "over_assigned": "SELECT count(*) FROM annotation_question WHERE campaign_id = %(c)s AND assigned > required",
        "too_many_annotators": """
            SELECT count(*) FROM (SELECT q.id FROM annotation_question q
              JOIN annotation_assignmentitem i ON i.question_id = q.id AND i.status IN ('leased', 'answered')
              WHERE q.campaign_id = %(c)s GROUP BY q.id, q.required
              HAVING count(DISTINCT i.annotator_id) > q.required) x""",
        "duplicate_leases": """
            SELECT count(*) FROM (SELECT 1 FROM annotation_assignmentitem i JOIN annotation_question q
              ON q.id = i.question_id WHERE q.campaign_id = %(c)s GROUP BY i.question_id, i.annotator_id
              HAVING count(*) > 1) x""",
        "duplicate_answers": """
            SELECT count(*) FROM (SELECT 1 FROM annotation_answer WHERE campaign_id = %(c)s
              GROUP BY question_id, annotator_id HAVING count(*) > 1) x""",
        "assigned_counter_wrong": """
            SELECT count(*) FROM annotation_question q WHERE q.campaign_id = %(c)s AND q.assigned <> (
              SELECT count(*) FROM annotation_assignmentitem i WHERE i.question_id = q.id
              AND i.status IN ('leased', 'answered'))""",
        "completed_counter_wrong": """
            SELECT count(*) FROM annotation_question q WHERE q.campaign_id = %(c)s AND q.completed <> (
              SELECT count(*) FROM annotation_answer a WHERE a.question_id = q.id)""",
        "answer_without_lease": """
            SELECT count(*) FROM annotation_answer a WHERE a.campaign_id = %(c)s AND NOT EXISTS (
              SELECT 1 FROM annotation_assignmentitem i WHERE i.question_id = a.question_id
              AND i.annotator_id = a.annotator_id AND i.status = 'answered')""",
    }
    out: dict[str, Any] = {}
    with connection.cursor() as cur:
        for name, sql in checks.items():
            cur.execute(sql, {"c": campaign_id})
            out[name] = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM annotation_answer WHERE campaign_id = %s", [campaign_id])
        stored = cur.fetchone()[0]
        cur.execute("SELECT count(*), count(*) FILTER (WHERE completed = required) FROM annotation_question "
                    "WHERE campaign_id = %s", [campaign_id])
        questions, complete = cur.fetchone()
    out["lost_answers"] = acknowledged - stored if acknowledged > stored else 0
    out["unacknowledged_answers"] = stored - acknowledged if stored > acknowledged else 0
    violations = sum(v for v in out.values())
    out.update({"answers_stored": stored, "answers_acknowledged": acknowledged, "questions": questions,
                "questions_complete": complete, "violations": violations, "ok": violations == 0})
    return out


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    shape: str  # "u4" (uWSGI, 4 processes), "4" (gunicorn, 4 sync workers) or "3x4" (3 gthread workers x 4 threads)
    url: str
    proc: subprocess.Popen
    media: str = "local"  # the server's MEDIA_STORAGE

    def pids(self) -> list[int]:
        try:
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            children = []
        return [self.proc.pid, *map(int, children)]

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _die_with_parent() -> None:
    """The server gets SIGTERM if this benchmark dies (Linux prctl PR_SET_PDEATHSIG): no stray server."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


SERVER_SECRET_KEY = "bench-only-not-secret"


def server_start(shape: str, database_url: str, token: str, media: str = "local") -> Server:
    port = free_port()
    if shape.startswith("u"):  # uWSGI with the deployment's config (config/uwsgi.ini), `u4`: 4 processes
        cmd = [str(Path(sys.executable).parent / "uwsgi"), "--ini", str(ROOT / "config" / "uwsgi.ini"),
               "--http-socket", f"127.0.0.1:{port}", "--processes", shape[1:], "--listen", "4096",
               "--harakiri", "120"]
    else:  # gunicorn: `4` sync workers, `3x4` gthread workers x threads
        workers, _, threads = shape.partition("x")
        cmd = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
               "--workers", workers, "--backlog", "4096", "--log-level", "warning", "--timeout", "120"]
        if threads:
            cmd += ["--worker-class", "gthread", "--threads", threads]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base", "DEBUG": "false",
           "SECRET_KEY": SERVER_SECRET_KEY, "DATABASE_URL": database_url, "BENCH_TRIVIAL_ENDPOINT": "1",
           "ALLOWED_HOSTS": "127.0.0.1,localhost", "LOG_LEVEL": "WARNING", "CONN_MAX_AGE": "600",
           # Scripted annotators with no think time are far above a human's rate: the per-annotator
           # API throttle (THROTTLE_ANNOTATOR, 600/minute by default) would answer 429 and measure itself.
           "THROTTLE_ANNOTATOR": "10000000/minute", "THROTTLE_ANON": "10000000/minute"}
    if media == "s3":  # the HIT's image URLs presigned by boto3, as in docker-compose.yml (nothing is fetched:
        # signing needs only the credentials and the endpoint's name)
        env.update(MEDIA_STORAGE="s3", S3_ENDPOINT_URL="http://127.0.0.1:9", S3_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret")
    env.pop("REDIS_URL", None)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 60
    while True:
        try:
            r = httpx.get(f"{url}/bench/trivial/", headers={"Authorization": f"Token {token}"}, timeout=5)
            if r.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the server ({shape}) did not start")
        time.sleep(0.2)
    server = Server(shape, url, proc, media)
    # Warm every worker (imports, URL resolver, database connection) before measuring.
    asyncio.run(_warm(url, token))
    return server


async def _warm(url: str, token: str) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Token {token}"}) as client:
        await asyncio.gather(*[client.get("/bench/trivial/") for _ in range(64)])


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def postgres_backend_pids(database: str) -> list[int]:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [database])
        return [r[0] for r in cur.fetchall()]


# ---------------------------------------------------------------------------------------------
# The load generator
# ---------------------------------------------------------------------------------------------
@dataclass
class Stats:
    next_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    trivial_ms: list[float] = field(default_factory=list)
    cycles: int = 0
    answers_acked: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    exhausted: int = 0

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def annotator_loop(client: Any, token: str, campaign_id: int, stop_at: float, think: float,
                         stats: Stats, rng: random.Random, chained: bool = False) -> None:
    """One annotator's cycles: a HIT (POST .../assignments/), think, submit. `chained`: the submit asks
    for the next HIT too ("next": true), so after the first HIT a cycle is one request."""
    headers = {"Authorization": f"Token {token}"}
    if think:
        await asyncio.sleep(rng.uniform(0, think))  # no synchronised start
    hit = None
    while time.perf_counter() < stop_at:
        if hit is None:
            t = time.perf_counter()
            try:
                r = await client.post(f"/api/campaigns/{campaign_id}/assignments/", headers=headers)
            except Exception as exc:  # noqa: BLE001 - counted
                stats.error(f"next {type(exc).__name__}")
                continue
            stats.next_ms.append((time.perf_counter() - t) * 1000)
            if r.status_code == 204:
                stats.exhausted += 1
                return
            if r.status_code not in (200, 201):
                stats.error(f"next {r.status_code}")
                continue
            hit = r.json()
        answers = [{"question": q["id"], "choice": rng.choice(q["choices"]), "time_ms": rng.randrange(500, 5000)}
                   for q in hit["questions"]]
        if think:
            await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))
        payload: dict[str, Any] = {"answers": answers, **({"next": True} if chained else {})}
        t = time.perf_counter()
        try:
            r = await client.post(f"/api/assignments/{hit['id']}/submit/", headers=headers, json=payload)
        except Exception as exc:  # noqa: BLE001 - counted
            stats.error(f"submit {type(exc).__name__}")
            hit = None
            continue
        stats.submit_ms.append((time.perf_counter() - t) * 1000)
        hit = None
        if r.status_code != 200:
            stats.error(f"submit {r.status_code}")
            continue
        body = r.json()
        if not body.get("duplicate"):
            stats.answers_acked += body["answers"]
        stats.cycles += 1
        following = body.get("next")
        if following is not None:
            if following["status"] == 204:
                stats.exhausted += 1
                return
            if following["status"] in (200, 201):
                hit = following["hit"]
            else:
                stats.error(f"next {following['status']}")


async def trivial_loop(client: Any, token: str, stop_at: float, stats: Stats) -> None:
    headers = {"Authorization": f"Token {token}"}
    while time.perf_counter() < stop_at:
        t = time.perf_counter()
        try:
            r = await client.get("/bench/trivial/", headers=headers)
        except Exception as exc:  # noqa: BLE001 - counted
            stats.error(f"trivial {type(exc).__name__}")
            continue
        stats.trivial_ms.append((time.perf_counter() - t) * 1000)
        if r.status_code != 200:
            stats.error(f"trivial {r.status_code}")


async def drive(url: str, tokens: list[str], *, duration: float, think: float, campaign_id: int | None,
                seed: int = 0, chained: bool = False) -> tuple[Stats, float]:
    import httpx

    stats = Stats()
    limits = httpx.Limits(max_connections=len(tokens) + 8, max_keepalive_connections=len(tokens) + 8)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=httpx.Timeout(60.0)) as client:
        start = time.perf_counter()
        stop_at = start + duration
        if campaign_id is None:
            tasks = [trivial_loop(client, t, stop_at, stats) for t in tokens]
        else:
            tasks = [annotator_loop(client, t, campaign_id, stop_at, think, stats, random.Random(seed * 1000 + i),
                                    chained=chained) for i, t in enumerate(tokens)]
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    return stats, elapsed


def scoped_people(people: list[tuple[int, str]], campaign_id: int) -> list[tuple[int, str]]:
    """The annotators with scoped task tokens for the campaign instead of their API keys (signed with the
    server's key)."""
    from django.test.utils import override_settings

    from annotation.models import Annotator
    from annotation.scoped_tokens import scoped_token_issue

    users = dict(Annotator.objects.filter(pk__in=[a for a, _ in people]).values_list("pk", "user_id"))
    with override_settings(SECRET_KEY=SERVER_SECRET_KEY):
        return [(a, scoped_token_issue(user_id=users[a], campaign_id=campaign_id)) for a, _ in people]


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q / 100 * len(s)))], 1)


def run_scenario(server: Server, database: str, people: list[tuple[int, str]], *, kind: str, n: int,
                 duration: float, think: float = 0.0, hit_size: int = 10, questions: int = 30000,
                 tokens: str = "key") -> dict[str, Any]:
    chosen = people[:n]
    campaign_id = None
    row: dict[str, Any] = {"scenario": kind, "server": server.shape, "media": server.media, "n": n, "think_s": think,
                           "duration_s": duration}
    if kind != "trivial":
        campaign_id, n_questions = campaign_load(questions=questions, hit_size=hit_size,
                                                 annotator_ids=[a for a, _ in chosen])
        row.update({"hit_size": hit_size, "pool_questions": n_questions, "required": 3, "tokens": tokens})
        if tokens == "scoped":  # the crowd work pages' tokens (s1.): signed for this campaign's annotation only
            chosen = scoped_people(chosen, campaign_id)
    server_pids = server.pids()
    pg_pids = postgres_backend_pids(database)
    cpu0 = (cpu_seconds(server_pids), cpu_seconds(pg_pids), resource.getrusage(resource.RUSAGE_SELF))
    load0 = os.getloadavg()[0]
    stats, elapsed = asyncio.run(drive(server.url, [t for _, t in chosen], duration=duration, think=think,
                                       campaign_id=campaign_id, chained=kind.endswith("-chained")))
    ru = resource.getrusage(resource.RUSAGE_SELF)
    cpu = {"server_s": round(cpu_seconds(server_pids) - cpu0[0], 1),
           "postgres_s": round(cpu_seconds(pg_pids) - cpu0[1], 1),
           "client_s": round(ru.ru_utime + ru.ru_stime - cpu0[2].ru_utime - cpu0[2].ru_stime, 1)}
    units = len(stats.trivial_ms) if kind == "trivial" else stats.cycles
    if units:  # CPU milliseconds per request (trivial) or per HIT cycle: less noisy than rates on a busy machine
        cpu.update({f"{k[:-2]}_ms_per_{'request' if kind == 'trivial' else 'cycle'}": round(v * 1000 / units, 2)
                    for k, v in list(cpu.items())})
    row.update({"elapsed_s": round(elapsed, 2), "cpu": cpu, "loadavg_1m": round(max(load0, os.getloadavg()[0]), 2),
                "errors": stats.errors, "error_count": sum(stats.errors.values())})
    if kind == "trivial":
        row.update({"requests_per_s": round(len(stats.trivial_ms) / elapsed, 1), "requests": len(stats.trivial_ms),
                    "p50_ms": pct(stats.trivial_ms, 50), "p95_ms": pct(stats.trivial_ms, 95),
                    "p99_ms": pct(stats.trivial_ms, 99)})
        return row
    requests = len(stats.next_ms) + len(stats.submit_ms)
    row.update({
        "cycles": stats.cycles, "cycles_per_s": round(stats.cycles / elapsed, 1),
        "answers_per_s": round(stats.answers_acked / elapsed, 1), "requests_per_s": round(requests / elapsed, 1),
        "requests": requests, "annotators_out_of_work": stats.exhausted,
        "next_p50_ms": pct(stats.next_ms, 50), "next_p95_ms": pct(stats.next_ms, 95),
        "next_p99_ms": pct(stats.next_ms, 99), "submit_p50_ms": pct(stats.submit_ms, 50),
        "submit_p95_ms": pct(stats.submit_ms, 95), "submit_p99_ms": pct(stats.submit_ms, 99),
        "integrity": integrity(campaign_id, stats.answers_acked)})
    return row


def describe(row: dict[str, Any]) -> str:
    head = f"[{row['server']:>4}] {row['scenario']:<13} N={row['n']:<4}"
    if row["scenario"] == "trivial":
        return (f"{head} {row['requests_per_s']:>7.1f} req/s          p50/p95/p99 {row['p50_ms']}/{row['p95_ms']}/"
                f"{row['p99_ms']} ms  errors {row['error_count']}  cpu {row['cpu']}  load {row['loadavg_1m']}")
    i = row["integrity"]
    return (f"{head} {row['cycles_per_s']:>6.1f} HIT/s {row['answers_per_s']:>7.1f} answers/s "
            f"({row['requests_per_s']:.0f} req/s, think {row['think_s']} s, k={row['hit_size']})  next p50/p95/p99 "
            f"{row['next_p50_ms']}/{row['next_p95_ms']}/{row['next_p99_ms']} ms  submit {row['submit_p50_ms']}/"
            f"{row['submit_p95_ms']}/{row['submit_p99_ms']} ms  errors {row['error_count']}  integrity "
            f"{'OK' if i['ok'] else 'VIOLATED ' + json.dumps(i)} ({i['answers_stored']} stored = "
            f"{i['answers_acknowledged']} acked)  cpu {row['cpu']}  load {row['loadavg_1m']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", default="u4",
                        help="server shapes: uN (uWSGI, N processes, config/uwsgi.ini: the deployment's), W "
                             "(gunicorn, W sync workers) or WxT (gunicorn gthread); the first is used for "
                             "everything but --scenarios server")
    parser.add_argument("--ns", default="1,50,200", help="annotator counts")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per run (or until the pool is empty)")
    parser.add_argument("--questions", type=int, default=30000, help="pool size per HIT run")
    parser.add_argument("--think", type=float, default=1.5,
                        help="mean think time (s) of the paced run at the largest N")
    parser.add_argument("--scenarios", default="trivial,hit,paced,one-question",
                        help="trivial, hit (think 0), paced (largest N with --think), one-question (N=50, k=1); "
                             "hit-chained and one-question-chained: the same with the next HIT taken by the submit "
                             "(\"next\": true: one request per cycle)")
    parser.add_argument("--smoke", action="store_true", help="tiny and fast; asserts completeness and integrity")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--tokens", choices=["key", "scoped"], default="key",
                        help="the HIT scenarios' tokens: API keys, or the scoped task tokens the crowd work pages carry "
                             "(the trivial endpoint always takes keys)")
    parser.add_argument("--media", choices=["local", "s3"], default="local",
                        help="the server's MEDIA_STORAGE: local (signed /media/ URLs) or s3 (boto3-presigned URLs, "
                             "the compose deployment's)")
    args = parser.parse_args()
    if args.smoke:
        args.ns, args.duration, args.questions, args.think, args.servers = "1,3", 1.5, 480, 0.05, "u2"
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    database = url.rsplit("/", 1)[1]
    start(url)

    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    ns = [int(n) for n in args.ns.split(",")]
    scenarios = args.scenarios.split(",")
    reset()
    one_question_n = 3 if args.smoke else 50
    people = annotators_create(max(ns + [one_question_n]))
    rows: list[dict[str, Any]] = []
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()}; load generator and server share them",
          flush=True)

    def record(row: dict[str, Any]) -> None:
        rows.append(row)
        print(describe(row), flush=True)

    shapes = args.servers.split(",")
    if "server" in scenarios:  # compare server shapes on the HIT cycle at the largest N
        for shape in shapes:
            server = server_start(shape, url, people[0][1], args.media)
            try:
                record(run_scenario(server, database, people, kind="server", tokens=args.tokens, n=max(ns), duration=args.duration,
                                    questions=args.questions))
            finally:
                server.stop()
    server = server_start(shapes[0], url, people[0][1], args.media)
    try:
        if "trivial" in scenarios:
            for n in ns:
                record(run_scenario(server, database, people, kind="trivial", n=n, duration=args.duration))
        if "hit" in scenarios:
            for n in ns:
                record(run_scenario(server, database, people, kind="hit", tokens=args.tokens, n=n, duration=args.duration,
                                    questions=args.questions))
        if "hit-chained" in scenarios:
            for n in ns:
                record(run_scenario(server, database, people, kind="hit-chained", tokens=args.tokens, n=n, duration=args.duration,
                                    questions=args.questions))
        if "paced" in scenarios:
            record(run_scenario(server, database, people, kind="paced", tokens=args.tokens, n=max(ns), duration=args.duration,
                                think=args.think, questions=args.questions))
        if "one-question" in scenarios:
            record(run_scenario(server, database, people, kind="one-question", tokens=args.tokens, n=one_question_n, duration=args.duration,
                                hit_size=1, questions=args.questions))
        if "one-question-chained" in scenarios:
            record(run_scenario(server, database, people, kind="one-question-chained", tokens=args.tokens, n=one_question_n,
                                duration=args.duration, hit_size=1, questions=args.questions))
    finally:
        server.stop()
    summary = summarize(rows)
    for line in summary["lines"]:
        print(line)
    out = {"rows": rows, "summary": summary}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    print(json.dumps(out))
    if args.smoke:
        hits = [r for r in rows if r["scenario"] != "trivial"]
        assert hits and all(r["integrity"]["ok"] for r in hits), "integrity violated"
        assert all(r["error_count"] == 0 for r in rows), "errors"
        assert all(r["cycles"] > 0 and r["next_p95_ms"] is not None for r in hits)
        assert all(r["requests_per_s"] > 0 for r in rows)
        print("smoke: OK")


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Targets: at the largest N, >= 1,000 answers/s with p95 < 150 ms for next and submit; the HIT
    cycle's request rate >= 40% of the trivial endpoint's; one-question HITs >= 5x Label Studio's
    21 annotations/s with next p50 <= 120 ms; zero integrity violations."""
    lines, out = [], {}
    trivial = {r["n"]: r for r in rows if r["scenario"] == "trivial"}
    hit = {r["n"]: r for r in rows if r["scenario"] == "hit"}
    for n, r in hit.items():
        if n in trivial:
            ratio = r["requests_per_s"] / trivial[n]["requests_per_s"]
            out[f"hit_vs_trivial_requests_n{n}"] = round(ratio, 3)
            lines.append(f"N={n}: HIT cycle {r['requests_per_s']} req/s = {ratio:.0%} of the trivial endpoint's "
                         f"{trivial[n]['requests_per_s']} req/s ({r['cycles_per_s']} cycles/s)")
    for r in rows:
        if r["scenario"].endswith("-chained"):
            base = trivial.get(r["n"])
            share = f" = {r['requests_per_s'] / base['requests_per_s']:.0%} of the trivial endpoint's" if base else ""
            lines.append(f"N={r['n']}: {r['scenario']} (k={r['hit_size']}) {r['answers_per_s']} answers/s, "
                         f"{r['requests_per_s']} req/s{share}")
    out["integrity_ok"] = all(r["integrity"]["ok"] for r in rows if "integrity" in r)
    out["errors"] = sum(r["error_count"] for r in rows)
    lines.append(f"integrity: {'OK at every run' if out['integrity_ok'] else 'VIOLATED'}; errors: {out['errors']}")
    return {**out, "lines": lines}


if __name__ == "__main__":
    main()
