"""Diagnostic: where the MTurk batch import's time goes, step by step (issue 23 "Imports").

Prepares the same campaign and synthetic export as `imports.py` (GEP paper format, 10 answers per
row, 3 workers per HIT), then runs `crowd.mturk_batch.mturk_batch_import` in this process with every
step wrapped: wall time and this process's PostgreSQL backend CPU (/proc) for the CSV parsing and
validation, the annotators, the assignments, each statement of the staged write (COPY, INSERT ...
SELECT leases, INSERT ... SELECT answers, counters UPDATE), the labels, the MTurk records and the
COMMIT (where the deferred foreign-key checks run). `--explain` runs the staged INSERTs under
EXPLAIN (ANALYZE, BUFFERS, WAL) with the constraints made immediate, so the foreign-key trigger
time shows per constraint (the import is then slower; its total is not a figure to quote).

    .venv/bin/python bench/import_steps.py --rows 100000 [--explain] [--per-row-fk]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _django import start  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/bench_import_steps"
STEPS: list[tuple[str, float, float]] = []
_PID: list[int] = []


def backend_cpu_s() -> float:
    """CPU seconds of this process's PostgreSQL backend (its pid read once: no statement per step)."""
    if not _PID:
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            _PID.append(cur.fetchone()[0])
    fields = Path(f"/proc/{_PID[0]}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t, cpu = time.perf_counter(), backend_cpu_s()
        try:
            return fn(*args, **kwargs)
        finally:
            STEPS.append((name, time.perf_counter() - t, backend_cpu_s() - cpu))
    return wrapper


def _statement_timer(explain: bool) -> Callable[..., Any]:
    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        head = " ".join(sql.split()[:3])
        is_insert = sql.startswith("INSERT INTO") and "annotation_import_stage" in sql
        t, cpu = time.perf_counter(), backend_cpu_s()
        if explain and is_insert:
            execute("SET CONSTRAINTS ALL IMMEDIATE", None, False, context)
            result = execute("EXPLAIN (ANALYZE, BUFFERS, WAL) " + sql, params, many, context)
            print(f"\n--- EXPLAIN {head}", *(r[0] for r in context["cursor"].fetchall()), sep="\n", flush=True)
            execute("SET CONSTRAINTS ALL DEFERRED", None, False, context)
        else:
            result = execute(sql, params, many, context)
        STEPS.append((f"  sql {head[:60]}", time.perf_counter() - t, backend_cpu_s() - cpu))
        return result
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--per-row-fk", action="store_true",
                        help="keep the per-row foreign-key triggers (staged.REFERENCES_CHECKED_IN_BULK = False)")
    args = parser.parse_args()
    start(os.environ.get("DATABASE_URL") or DEFAULT_DB)
    import imports
    from django.db import connection

    import annotation.services.answers as answers
    import crowd.mturk_batch as batch
    from campaigns.models import Campaign

    if args.per_row_fk:
        import annotation.services.staged as staged

        staged.REFERENCES_CHECKED_IN_BULK = False  # type: ignore[attr-defined,unused-ignore]
    imports.reset()
    with tempfile.TemporaryDirectory(prefix="bench-import-steps-") as tmp:
        cid, path, n = imports.mturk_prepare(args.rows, Path(tmp))
        connection.close()
        for mod, name in ((batch, "_read_rows"), (batch, "_parse_rows"), (batch, "_resolve"),
                          (batch, "mturk_annotators_ensure"), (answers, "_assignments_insert"),
                          (answers, "staged_answers_write"), (answers, "answers_derive"), (batch, "rows_insert")):
            setattr(mod, name, _timed(name, getattr(mod, name)))
        campaign = Campaign.objects.get(pk=cid)
        from django.db import connections
        conn = connections["default"]
        conn.ensure_connection()
        backend_cpu_s()
        commit = conn.commit
        conn.commit = _timed("COMMIT (deferred FK checks)", commit)  # type: ignore[method-assign]
        load = os.getloadavg()
        t = time.perf_counter()
        cpu0 = backend_cpu_s()
        with connection.execute_wrapper(_statement_timer(args.explain)), path.open("rb") as handle:
            result = batch.mturk_batch_import(campaigns=[campaign], data=handle)
        total = time.perf_counter() - t
        cpu = {"postgres_cpu_s": round(backend_cpu_s() - cpu0, 2)}
    print(f"\n{result.rows} rows, {result.answers} answers ({n} in the file) in {total:.2f} s; {cpu}; "
          f"load average before {load}, after {os.getloadavg()}")
    print(f"{'step':<64} {'wall s':>8} {'PG CPU s':>9}")
    for name, wall, pg in STEPS:
        print(f"{name:<64} {wall:>8.2f} {pg:>9.2f}")


if __name__ == "__main__":
    main()
