"""Profile the HIT cycle in-process: statements per cycle, CPU per cycle (under the profiler, then
without it), a cProfile listing (`--sort tottime|cumulative`, `--save` for the raw pstats) and the
wall time of each of the engine's statements. Through Django's WSGI handler (middleware, DRF, token
authentication), without gunicorn or a network, on its own PostgreSQL database (`bench_prof`).

    .venv/bin/python bench/profile_hit.py                     # 200 annotators taking turns, 300 cycles
    .venv/bin/python bench/profile_hit.py --sort tottime --annotators 1 --hit-size 1
    .venv/bin/python bench/profile_hit.py --chained           # the submit takes the next HIT ("next": true)
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import start  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_prof"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--hit-size", type=int, default=10)
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--lines", type=int, default=40)
    parser.add_argument("--questions", type=int, default=30000)
    parser.add_argument("--chained", action="store_true",
                        help='submit with "next": true, the next HIT from its answer (one request per cycle)')
    parser.add_argument("--statements", action="store_true", help="also print one cycle's statements (first 160 characters)")
    parser.add_argument("--scoped", action="store_true",
                        help="authenticate with scoped task tokens (s1., what the crowd work pages carry) instead of API keys")
    parser.add_argument("--save", metavar="PATH", help="also write the raw profile (pstats) there")
    parser.add_argument("--redis", action="store_true",
                        help="keep REDIS_URL: the throttles count in Redis, as in production (round trips counted)")
    parser.add_argument("--explain", action="store_true",
                        help="also EXPLAIN (ANALYZE, BUFFERS) each engine statement with the last cycle's parameters, "
                             "planned for them (custom) and generic (rolled back)")
    parser.add_argument("--plans", action="store_true",
                        help="also list this connection's prepared statements with their generic / custom plan counts")
    args = parser.parse_args()
    os.environ.update(BENCH_TRIVIAL_ENDPOINT="1", ALLOWED_HOSTS="127.0.0.1,localhost",
                      THROTTLE_ANNOTATOR="10000000/minute", THROTTLE_ANON="10000000/minute", CONN_MAX_AGE="600")
    if not args.redis:
        os.environ.pop("REDIS_URL", None)
    url = os.environ.get("DATABASE_URL") or DEFAULT_DB
    start(url)
    import annotation_load as load
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation import prepared

    load.reset()
    people = load.annotators_create(args.annotators)
    campaign_id, _ = load.campaign_load(questions=args.questions, hit_size=args.hit_size, annotator_ids=[p[0] for p in people])
    tokens = [token for _, token in people]
    if args.scoped:  # the crowd work pages' tokens: signed, one campaign's annotation endpoints only
        from annotation.models import Annotator
        from annotation.scoped_tokens import scoped_token_issue

        users = dict(Annotator.objects.filter(pk__in=[p[0] for p in people]).values_list("pk", "user_id"))
        tokens = [scoped_token_issue(user_id=users[a], campaign_id=campaign_id) for a, _ in people]
    app = WSGIHandler()
    turn = [0]

    def call(method: str, path: str, body: bytes = b"") -> tuple[str, bytes]:
        env = {"REQUEST_METHOD": method, "PATH_INFO": path, "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
               "HTTP_HOST": "127.0.0.1", "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
               "CONTENT_TYPE": "application/json", "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
               "HTTP_AUTHORIZATION": f"Token {tokens[turn[0] % len(tokens)]}", "QUERY_STRING": ""}
        status: list[str] = []
        data = b"".join(app(env, lambda s, h, e=None: status.append(s)))
        return status[0], data

    held: dict[int, Any] = {}  # --chained: each annotator's next HIT, from its last submit

    def cycle() -> None:
        who = turn[0] % len(tokens)
        hit = held.pop(who, None)
        if hit is None:
            status, data = call("POST", f"/api/campaigns/{campaign_id}/assignments/")
            assert status.startswith("201"), (status, data[:300])
            hit = json.loads(data)
        answers = [{"question": q["id"], "choice": q["choices"][0], "time_ms": 900} for q in hit["questions"]]
        body = {"answers": answers, **({"next": True} if args.chained else {})}
        status, data = call("POST", f"/api/assignments/{hit['id']}/submit/", json.dumps(body).encode())
        assert status.startswith("200"), (status, data[:300])
        if args.chained:
            following = json.loads(data)["next"]
            assert following["status"] == 201, following
            held[who] = following["hit"]
        turn[0] += 1

    for _ in range(20):  # warm: imports, prepared statements
        cycle()
    import redis
    redis_commands: list[str] = []
    send = redis.Redis.execute_command

    def counted(self: Any, *cmd: Any, **options: Any) -> Any:
        redis_commands.append(str(cmd[0]))
        return send(self, *cmd, **options)

    redis.Redis.execute_command = counted  # type: ignore[method-assign]
    with CaptureQueriesContext(connection) as ctx:
        cycle()
    redis.Redis.execute_command = send  # type: ignore[method-assign]
    sqls = [q["sql"] for q in ctx.captured_queries]
    tx = sum(sql in ("BEGIN", "COMMIT", "ROLLBACK") for sql in sqls)
    print(f"statements per cycle: {len(sqls)} (BEGIN/COMMIT: {tx}; SAVEPOINT: {sum('SAVEPOINT' in q for q in sqls)})")
    if args.statements:
        for sql in sqls:
            print("   ", " ".join(sql.split())[:160])
    print(f"Redis commands per cycle: {len(redis_commands)} {collections.Counter(redis_commands) if redis_commands else ''}")
    backend = pg_backend(connection)
    profile = cProfile.Profile(time.process_time)
    cpu = time.process_time()
    profile.enable()
    for _ in range(args.cycles):
        cycle()
    profile.disable()
    print(f"CPU per cycle under the profiler: {(time.process_time() - cpu) / args.cycles * 1000:.2f} ms")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(args.sort).print_stats(args.lines)
    if args.save:
        profile.dump_stats(args.save)
    print(out.getvalue())
    run, spent = prepared.run, collections.defaultdict(list)

    def timed(sql: str, params: dict) -> list:
        t = time.perf_counter()
        try:
            return run(sql, params)
        finally:
            spent[" ".join(sql.split())[:70]].append(time.perf_counter() - t)

    prepared.run = timed
    cpu, pg_cpu = time.process_time(), backend()
    for _ in range(args.cycles):
        cycle()
    cpu, pg_cpu = time.process_time() - cpu, backend() - pg_cpu
    prepared.run = run
    print(f"CPU per cycle without the profiler (statement timing on): {cpu / args.cycles * 1000:.2f} ms; "
          f"its PostgreSQL backend's: {pg_cpu / args.cycles * 1000:.2f} ms")
    print("wall time per engine statement (round trip included):")
    for sql, times in spent.items():
        print(f"  {sum(times) / len(times) * 1000:7.3f} ms  x{len(times):<5} {sql}")
    if args.plans:
        plans_print(connection)
    if args.explain:
        explained: set[str] = set()

        def explaining(sql: str, params: dict) -> list:
            if sql not in explained:
                explained.add(sql)
                explain_print(sql, params)
            return run(sql, params)

        prepared.run = explaining
        for _ in range(3):  # a HIT cycle's statements, each explained once just before it runs
            cycle()
        prepared.run = run


def explain_print(sql: str, params: dict[str, Any]) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of one statement as a prepared statement executed with `params`, in
    a savepoint that is rolled back (the statement itself runs next, for real): once planned for these
    parameters (custom plan: its Planning Time is paid on every execution) and once generic (planned
    once per connection and reused)."""
    import re

    from django.db import connection, transaction

    names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", sql)))
    numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${names.index(m.group(1)) + 1}", sql)
    for mode in ("force_custom_plan", "force_generic_plan"):
        # PREPARE is not transactional: deallocated before the rollback (psycopg's own ROLLBACK would
        # also DEALLOCATE ALL, which its statement cache survives by preparing again).
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(f"SET LOCAL plan_cache_mode = {mode}")
            cur.execute(f"PREPARE bench_explain AS {numbered}")
            cur.execute(f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_explain({', '.join(['%s'] * len(names))})",
                        [params[n] for n in names])
            print(f"--- {' '.join(sql.split())[:70]} ({mode.split('_')[1]} plan)")
            print("\n".join(row[0] for row in cur.fetchall()))
            cur.execute("DEALLOCATE bench_explain")
            transaction.set_rollback(True)


def pg_backend(connection: Any) -> Any:
    """A function giving the CPU seconds (user + system, from /proc) used so far by this connection's
    PostgreSQL backend process (the server runs on this machine)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    return cpu


def plans_print(connection: Any) -> None:
    """This connection's prepared statements: how often PostgreSQL planned each one for its parameters
    (custom) and how often it reused the cached generic plan. A statement whose custom count keeps
    growing is planned again on every execution."""
    with connection.cursor() as cur:
        cur.execute("SELECT generic_plans, custom_plans, statement FROM pg_prepared_statements ORDER BY statement")
        rows = cur.fetchall()
    print("prepared statements on this connection (generic plans / custom plans):")
    for generic, custom, sql in rows:
        print(f"  {generic:6} / {custom:<6} {' '.join(sql.split())[:90]}")


if __name__ == "__main__":
    main()
