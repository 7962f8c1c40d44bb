"""Hand-written SQL on PostgreSQL as server-side prepared statements, through Django's cursor wrapper.

The HIT engine (`annotation/hits/pg.py`), the majority labels (`annotation/labels.py`) and token
authentication (`annotation/authentication.py`) run their hot statements through :func:`run`, the
one place that knows how: psycopg `prepare=True` (parsed and planned once per connection; Django's own
cursors bind on the client and never prepare). Errors stay Django's (`IntegrityError`,
`OperationalError`) and `CaptureQueriesContext` / DEBUG logging see every statement.
Set `DATABASE_PREPARED_STATEMENTS=false` behind a pooler that cannot keep prepared statements
(PgBouncer < 1.21 in transaction mode). `bench/profile_hit.py` replaces :func:`run` to time each
statement, so callers look it up on this module (`prepared.run(...)`), not by importing the name.

Plans: PostgreSQL plans a prepared statement for its parameters five times, then keeps its generic plan
unless that one is costed above the custom plans' average. A generic plan counts an array parameter as
ten elements; a custom plan sees the array, so one of one element (a one-question HIT) always looked
cheaper and the statement was planned again on every execution (~0.5 ms of PostgreSQL CPU per
one-question HIT cycle, bench/README.md section 1). The hot statements therefore pass their arrays
behind a scalar subquery, `unnest((SELECT %(ids)s::bigint[]))`, `id = ANY((SELECT %(ids)s::bigint[])::bigint[])`:
neither plan sees the length, the costs agree and the generic plan is kept (it is the plan a ten-question
HIT already used). Not for a bulk statement whose plan should see its array (`labels.LABELS_BULK`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.utils import CursorDebugWrapper
from psycopg import pq


class _PreparedCursor(psycopg.Cursor[Any]):
    """A server-side-binding cursor whose statements ask to be prepared. psycopg prepares them unless
    the connection's `prepare_threshold` is None: settings set it when DATABASE_PREPARED_STATEMENTS is
    on (the default)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = True,
                binary: bool | None = None) -> Any:
        return super().execute(query, params, prepare=prepare, binary=binary)


class _DebugCursor(CursorDebugWrapper):
    """Django's logging cursor (DEBUG, CaptureQueriesContext), logging the statement with its
    parameters bound (a prepared statement leaves psycopg no query text to report)."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        with self.debug_sql(self.db.ops.compose_sql(sql, params)):
            return self._execute_with_wrappers(sql, params, many=False, executor=self._execute)


def run(sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Execute one statement in the current transaction; its rows (none for a write without RETURNING)."""
    db = connections[DEFAULT_DB_ALIAS]  # `connection` itself, looked up once (each attribute of the proxy is a lookup)
    db.ensure_connection()
    raw = _PreparedCursor(db.connection)
    # make_cursor wraps a DB-API cursor (django-stubs type it as taking Django's own wrapper).
    cur = _DebugCursor(raw, db) if db.queries_logged else db.make_cursor(raw)  # type: ignore[arg-type]
    with cur:
        cur.execute(sql, params)
        # The connection just answered: Django's once-per-request health check (CONN_HEALTH_CHECKS, a
        # `SELECT 1` round trip at the request's first transaction or ORM cursor) has nothing left to
        # learn. A token-authenticated request's first statement is this one (the token lookup), which
        # ran before that check anyway; a dead connection fails it and is closed at the request's end.
        db.health_check_done = True  # type: ignore[attr-defined]  # Django's own flag, not in django-stubs
        # Rows only when the statement returned some (psycopg's `description` would build a Column
        # object per column on every call just to answer that: ~7% of a HIT cycle's CPU).
        result = raw.pgresult
        return cur.fetchall() if result is not None and result.status == pq.ExecStatus.TUPLES_OK else []
