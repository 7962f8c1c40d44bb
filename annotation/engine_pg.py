"""The HIT engine's two hot paths in hand-written SQL for PostgreSQL: "next" and "submit".

`services.assignment_next` and `services.answers_submit` call these on PostgreSQL; the ORM versions
in `services.py` define the same behaviour and run elsewhere (the SQLite demo). Why: a HIT cycle
through the ORM was 18 statements and ~34 ms of CPU on the 2-core benchmark machine, 42% of the
Python time spent compiling SQL (profile in bench/README.md). Here a cycle is

    next:   BEGIN; lock the enrollment + campaign state + held HIT + unqualified families + expired
            leases (1); the pool SELECT ... FOR NO KEY UPDATE SKIP LOCKED (2); HIT + leases + counters
            in one data-modifying WITH (3); COMMIT
    submit: BEGIN; lock the HIT + its items (1); answers + leases + counters + HIT in one WITH (2);
            majority labels of the touched questions (3); COMMIT

each a server-side prepared statement (psycopg `prepare=True`: parsed and planned once per
connection). The statements go through Django's cursor wrapper, so errors are Django's
(`IntegrityError`, `OperationalError`) and `CaptureQueriesContext` / DEBUG logging see them.
Set `DATABASE_PREPARED_STATEMENTS=false` behind a pooler that cannot keep prepared statements
(PgBouncer < 1.21 in transaction mode).

Plans: a prepared statement gets a generic plan after five executions on a connection, made with the
statistics of that moment. The statements are written so that the plan does not hinge on them where
it matters (the pool walks its partial index; labels read answers only through the question index;
live HITs have their own small partial indexes), but a table that grew a lot since its last ANALYZE
(a fresh database under a burst) can still get a sequential scan for a while: autovacuum's ANALYZE
invalidates the plan (within a minute of 10% growth), and a connection's prepared statements go with
it (`CONN_MAX_AGE`, 60 s by default). `bench/profile_hit.py` shows each statement's time.

Locking is the ORM version's, statement for statement; the subtle part is READ COMMITTED snapshots:
a statement that waited for a row lock re-reads only the locked row, not its subqueries. Hence:
  - next: the held-HIT test is repeated inside the pool statement (which starts after the lock is
    held); an empty pool is re-checked for a HIT created by a concurrent request of the same annotator.
  - submit: the items are read in the locking statement; if the HIT turned out expired (a reclaim
    committed while we waited), they are read again.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import psycopg
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper

from .spec_section import validate_annotation


class _PreparedCursor(psycopg.Cursor):
    """A server-side-binding cursor whose statements ask to be prepared (Django's own cursors bind on
    the client and never prepare). psycopg prepares them unless the connection's `prepare_threshold`
    is None: settings set it when DATABASE_PREPARED_STATEMENTS is on (the default)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = True,
                binary: bool | None = None) -> Any:
        return super().execute(query, params, prepare=prepare, binary=binary)


class _DebugCursor(CursorDebugWrapper):
    """Django's logging cursor (DEBUG, CaptureQueriesContext), logging the statement with its
    parameters bound (a prepared statement leaves psycopg no query text to report)."""

    def execute(self, sql: str, params: Any = None) -> Any:
        with self.debug_sql(self.db.ops.compose_sql(sql, params)):
            return self._execute_with_wrappers(sql, params, many=False, executor=self._execute)


def run(sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Execute one statement in the current transaction; its rows (none for a write without RETURNING)."""
    connection.ensure_connection()
    raw = _PreparedCursor(connection.connection)
    cur = _DebugCursor(raw, connection) if connection.queries_logged else connection.make_cursor(raw)
    with cur:
        cur.execute(sql, params)
        return cur.fetchall() if raw.description is not None else []


@lru_cache(maxsize=256)
def settings_of(kind: str, section_json: str | None) -> Mapping[str, Any]:
    """A campaign's annotation settings from its spec's section text (parsed and validated once)."""
    from campaigns.spec import Problems

    raw = json.loads(section_json) if section_json else {}
    return validate_annotation(raw if isinstance(raw, Mapping) else {}, Problems(), {"kind": kind})


# ---------------------------------------------------------------------------------------------
# next
# ---------------------------------------------------------------------------------------------
HELD_HIT = """
    SELECT h.id FROM annotation_assignment h
    WHERE h.annotator_id = %(annotator)s AND h.campaign_id = %(campaign)s AND h.status = 'active'
      AND h.expires_at > %(now)s"""

NEXT_STATE = f"""
WITH expired AS (
    SELECT x.id FROM annotation_assignment x
    WHERE x.campaign_id = %(campaign)s AND x.status = 'active' AND x.expires_at < %(now)s
    FOR NO KEY UPDATE SKIP LOCKED)
SELECT e.consented_at IS NOT NULL, e.status, e.status_reason, c.status, c.kind, (c.spec -> 'annotation')::text,
       ({HELD_HIT} ORDER BY h.created_at DESC LIMIT 1),
       ARRAY(SELECT q.family FROM annotation_qualification q
             WHERE q.campaign_id = %(campaign)s AND NOT EXISTS (
                 SELECT 1 FROM annotation_qualificationattempt t
                 WHERE t.qualification_id = q.id AND t.annotator_id = %(annotator)s AND t.passed)),
       ARRAY(SELECT id FROM expired ORDER BY id)
FROM annotation_enrollment e JOIN campaigns_campaign c ON c.id = e.campaign_id
WHERE e.campaign_id = %(campaign)s AND e.annotator_id = %(annotator)s AND c.deleted_at IS NULL
FOR NO KEY UPDATE OF e"""

_POOL_WHERE = """
FROM annotation_question q JOIN generation_image i ON i.id = q.image_id
WHERE q.campaign_id = %(campaign)s AND q.assigned < q.required AND NOT i.excluded AND q.is_gold = %(gold)s
  AND q.family <> ALL(%(unqualified)s::text[])
  AND NOT EXISTS (SELECT 1 FROM annotation_assignmentitem s
                  WHERE s.question_id = q.id AND s.annotator_id = %(annotator)s)"""

# The partial index question_pool_open_idx serves this ORDER BY; the held-HIT test is repeated here
# because this statement's snapshot is taken after the enrollment lock is held.
NEXT_POOL = f"""
SELECT q.id, q.text, q.choices::json, q.image_id, i.web_file, i.file, i.source_url, q.slot
{_POOL_WHERE}
  AND NOT EXISTS ({HELD_HIT})
ORDER BY q.assigned DESC, q.completed DESC, q.order_key, q.image_id, q.slot
LIMIT %(limit)s
FOR NO KEY UPDATE OF q SKIP LOCKED"""

NEXT_GOLD = f"""
SELECT q.id, q.text, q.choices::json, q.image_id, i.web_file, i.file, i.source_url, q.slot
{_POOL_WHERE}
ORDER BY random() LIMIT %(limit)s"""

NEXT_WRITE = """
WITH hit AS (
    INSERT INTO annotation_assignment (campaign_id, annotator_id, status, created_at, expires_at, submitted_at,
        submission_digest, review, review_reason, reviewed_at, reward, bonus, external_assignment_id, external_hit_id)
    VALUES (%(campaign)s, %(annotator)s, 'active', %(now)s, %(expires)s, NULL, '', 'pending', '', NULL, 0, 0, NULL, '')
    RETURNING id),
leases AS (
    INSERT INTO annotation_assignmentitem (assignment_id, question_id, annotator_id, position, status)
    SELECT hit.id, x.question, %(annotator)s, x.position - 1, 'leased'
    FROM hit, unnest(%(questions)s::bigint[]) WITH ORDINALITY AS x(question, position)),
counters AS (
    UPDATE annotation_question SET assigned = assigned + 1 WHERE id = ANY(%(real)s::bigint[]))
SELECT id FROM hit"""


# ---------------------------------------------------------------------------------------------
# submit
# ---------------------------------------------------------------------------------------------
_ITEMS = """
    SELECT json_agg(json_build_array(it.question_id, it.status, q.choices, q.is_gold) ORDER BY it.position)
    FROM annotation_assignmentitem it JOIN annotation_question q ON q.id = it.question_id
    WHERE it.assignment_id = %(assignment)s"""

SUBMIT_STATE = f"""
SELECT a.status, a.submission_digest, a.submitted_at, a.reward, a.campaign_id, c.kind,
       (c.spec -> 'annotation')::text, ({_ITEMS})
FROM annotation_assignment a JOIN campaigns_campaign c ON c.id = a.campaign_id
WHERE a.id = %(assignment)s AND a.annotator_id = %(annotator)s
FOR NO KEY UPDATE OF a"""

SUBMIT_ITEMS = _ITEMS

SUBMIT_WRITE = """
WITH answers AS (
    INSERT INTO annotation_answer (campaign_id, question_id, annotator_id, assignment_id, choice, time_ms,
                                   created_at, corrects_id, source)
    SELECT %(campaign)s, x.question, %(annotator)s, %(assignment)s, x.choice, x.time_ms, %(now)s, NULL, 'web'
    FROM unnest(%(questions)s::bigint[], %(choices)s::text[], %(times)s::integer[]) AS x(question, choice, time_ms)),
leases AS (
    UPDATE annotation_assignmentitem SET status = 'answered' WHERE assignment_id = %(assignment)s),
counters AS (
    UPDATE annotation_question SET completed = completed + 1 WHERE id = ANY(%(real)s::bigint[]))
UPDATE annotation_assignment SET status = 'submitted', submitted_at = %(now)s, submission_digest = %(digest)s,
       reward = %(reward)s
WHERE id = %(assignment)s"""

# Late submission: re-take `assigned + 1` on every released question that still has room.
SUBMIT_RETAKE = """
WITH taken AS (
    UPDATE annotation_question SET assigned = assigned + 1
    WHERE id = ANY(%(questions)s::bigint[]) AND assigned < required RETURNING 1)
SELECT count(*) FROM taken"""

# Majority labels of the given questions (aggregation.labels_recompute's rules: the newest answer of
# each chain, blocked annotators' answers left out when asked, ties stored as "tie"), one statement.
LABELS = """
WITH given AS (
    -- Every answer to the given questions, corrections included (a correction answers the question it
    -- corrects): found by the question index, whatever the statistics say.
    SELECT an.id, an.question_id, an.annotator_id, an.choice, an.corrects_id
    FROM annotation_answer an JOIN annotation_question q ON q.id = an.question_id
    WHERE an.question_id = ANY(%(questions)s::bigint[]) AND q.campaign_id = %(campaign)s AND NOT q.is_gold),
votes AS (
    SELECT g.question_id, g.choice, count(*) AS n
    FROM given g
    WHERE g.id NOT IN (SELECT corrects_id FROM given WHERE corrects_id IS NOT NULL)
      AND NOT (%(exclude_blocked)s AND COALESCE((
          SELECT b.status = 'blocked' FROM annotation_enrollment b
          WHERE b.campaign_id = %(campaign)s AND b.annotator_id = g.annotator_id), false))
    GROUP BY g.question_id, g.choice),
labels AS (
    SELECT question_id, jsonb_object_agg(choice, n) AS votes, sum(n)::integer AS answers,
           count(*) FILTER (WHERE top) > 1 AS tie, min(choice) FILTER (WHERE top) AS winner
    FROM (SELECT v.*, v.n = max(v.n) OVER (PARTITION BY v.question_id) AS top FROM votes v) ranked
    GROUP BY question_id),
written AS (
    INSERT INTO annotation_aggregatedlabel (question_id, method, label, votes, answers, tie, updated_at)
    SELECT question_id, 'majority', CASE WHEN tie THEN 'tie' ELSE winner END, votes, answers, tie, %(now)s
    FROM labels ORDER BY question_id
    ON CONFLICT (question_id) DO UPDATE SET method = EXCLUDED.method, label = EXCLUDED.label,
        votes = EXCLUDED.votes, answers = EXCLUDED.answers, tie = EXCLUDED.tie, updated_at = EXCLUDED.updated_at
    RETURNING 1),
stale AS (
    DELETE FROM annotation_aggregatedlabel
    WHERE question_id = ANY(%(questions)s::bigint[]) AND question_id NOT IN (SELECT question_id FROM labels))
SELECT count(*) FROM written"""


def labels_write(*, campaign_id: int, question_ids: Sequence[int], exclude_blocked: bool, now: Any) -> int:
    rows = run(LABELS, {"campaign": campaign_id, "questions": list(question_ids),
                        "exclude_blocked": exclude_blocked, "now": now})
    return int(rows[0][0])
