"""The PostgreSQL fast path of a bulk answer import (`mturk_import` in common/fastpath.py), set-based:
the answers go by one binary COPY of integer columns (built by numpy, no Python object per answer)
into a temporary staging table, then one INSERT ... SELECT writes the leases, one the answers, one
UPDATE moves the counters of every touched question. Its portable twin is the rest of
`annotation.services.answers.answers_import`; `tests/contracts/test_mturk_import.py` holds both to
the same stored rows.

A million answers cost 48 s of Python and 89 s of PostgreSQL CPU as COPY rows written one by one,
counters and an ORM label upsert (bench/imports.py, bench/README.md section 2).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np
from django.db import IntegrityError, connection
from django.db.models import Model

from campaigns.models import Campaign
from common import fastpath

from ..models import Annotator, Answer, Assignment, AssignmentItem, Question

STAGE = "annotation_import_stage"
CHUNK = 250_000  # answers per COPY buffer (~15 MB)
# For the rest of the import's transaction (SET LOCAL): the two INSERTs' sort of the stage (1M answers:
# ~120 MB) and the labels statement's CTEs in memory instead of external merges on disk (work_mem 4 MB
# by default); and the COMMIT does not wait for its WAL flush. synchronous_commit = off cannot corrupt
# anything: a crash within ~0.6 s (3 x wal_writer_delay) after the import returned may lose the whole
# import as if it never ran (all or nothing, as before); nothing else is affected (docs/architecture.md).
SETTINGS = ("SET LOCAL work_mem = '256MB'", "SET LOCAL synchronous_commit = off")
# The foreign keys of the lease and answer rows (8 per answer) are checked in bulk, not by a trigger per
# row: before the INSERTs, one statement per referenced table verifies that every id the stage names
# exists and locks those rows FOR KEY SHARE (the lock the per-row check takes; the questions are locked
# by the counters' UPDATE), then the INSERTs run with session_replication_role = replica (only the
# triggers are off: unique and check constraints still hold; these tables have no other triggers).
# The per-row checks were half of PostgreSQL's work for a million answers (bench/README.md section 2).
# Needs a role allowed to SET session_replication_role (superuser, or GRANT SET ON PARAMETER); any other
# role keeps the per-row triggers. False turns the bulk check off everywhere.
REFERENCES_CHECKED_IN_BULK = True

# One row of PostgreSQL's binary COPY format: a field count, then (length, big-endian value) per field.
_FIELDS = ("assignment", "question", "annotator", "campaign", "position", "choice", "time_ms")
_ROW = np.dtype([("n", ">i2"), *((f, [("len", ">i4"), ("v", ">i8")]) for f in _FIELDS)])
_HEADER = b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big")
_TRAILER = (-1).to_bytes(2, "big", signed=True)


def _binary_rows(columns: dict[str, np.ndarray], start: int, stop: int) -> bytes:
    rows = np.empty(stop - start, dtype=_ROW)
    rows["n"] = len(_FIELDS)
    for name in _FIELDS:
        rows[name]["len"] = 8
        rows[name]["v"] = columns[name][start:stop]
    return rows.tobytes()


def _references_verified(cursor: Any, table: str, column: str) -> None:
    """Every stage row's `column` names a row of `table`, and those rows are locked FOR KEY SHARE until
    the transaction ends: what the foreign key's per-row trigger checks and locks, as one statement."""
    cursor.execute(f"SELECT (SELECT count(DISTINCT {column}) FROM {STAGE}), count(*) FROM (SELECT 1 FROM "
                   f"{table} WHERE id IN (SELECT {column} FROM {STAGE}) FOR KEY SHARE) locked")
    wanted, found = cursor.fetchone()
    if wanted != found:
        raise IntegrityError(f"{wanted - found} of the import's {column} values name no row of {table}.")


def _triggers_skippable(cursor: Any) -> bool:
    """Whether this role may turn the per-row foreign-key triggers off for a statement
    (session_replication_role: a superuser, or on PostgreSQL 15+ `GRANT SET ON PARAMETER`)."""
    if connection.pg_version >= 150000:  # type: ignore[attr-defined]
        cursor.execute("SELECT has_parameter_privilege('session_replication_role', 'SET')")
    else:
        cursor.execute("SELECT current_setting('is_superuser') = 'on'")
    return bool(cursor.fetchone()[0]) and REFERENCES_CHECKED_IN_BULK


@contextmanager
def references_checked_in_bulk(checks: Sequence[tuple[type[Model], Iterable[int], bool]]) -> Iterator[None]:
    """The INSERTs in the block run without their foreign keys' per-row triggers, after one statement per
    referenced table has verified that every id the new rows name exists (`checks`: (model, ids, lock)).
    With `lock`, those rows are locked FOR KEY SHARE until the transaction ends (the per-row check's
    lock); `lock=False` only for rows this transaction has inserted itself (no other transaction can
    see them, so none can delete them). A missing id is an IntegrityError before anything is written.
    The caller names every foreign key of the rows it inserts in the block. Without the privilege
    (`_triggers_skippable`), or off the `mturk_import` fast path, the block runs with the per-row
    triggers (checked at COMMIT, deferred).
    The bulk import's Assignments and MTurk records: 100,000 rows each at 1M answers, whose deferred
    checks took ~2.9 s of PostgreSQL CPU at COMMIT (bench/README.md section 2)."""
    if not fastpath.enabled("mturk_import"):  # the portable twin (and SQLite): the per-row checks
        yield
        return
    with connection.cursor() as cursor, connection.wrap_database_errors:
        skip = _triggers_skippable(cursor)
        if skip:
            for model, ids, lock in checks:
                wanted = sorted(set(ids))
                cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM {connection.ops.quote_name(model._meta.db_table)} "
                               f"WHERE id = ANY(%s::bigint[]){' FOR KEY SHARE' if lock else ''}) found", [wanted])
                found = int(cursor.fetchone()[0])
                if found != len(wanted):
                    raise IntegrityError(f"{len(wanted) - found} of the ids the new rows name are not rows of "
                                         f"{model._meta.db_table}.")
            cursor.execute("SET LOCAL session_replication_role = replica")
    yield
    # Only after the block succeeded: on an error the transaction (or its savepoint) rolls back, which
    # undoes the SET LOCAL too.
    if skip:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = origin")


def staged_answers_write(*, assignment: np.ndarray, question: np.ndarray, annotator: np.ndarray,
                         campaign: np.ndarray, position: np.ndarray, choice: np.ndarray, choices: list[str],
                         time_ms: np.ndarray, source: str, now: datetime) -> None:
    """Leases (answered), answers and counters of one import, in the caller's transaction. One entry
    per answer in each array; `choice` indexes `choices`. A question answered by more workers than
    its R gets R raised to that number (as the portable twin does). A reference to a missing row is an
    IntegrityError and nothing is written (the caller's transaction rolls back)."""
    columns = {"assignment": assignment, "question": question, "annotator": annotator, "campaign": campaign,
               "position": position, "choice": choice, "time_ms": time_ms}
    n = len(question)
    q = connection.ops.quote_name
    with connection.cursor() as cursor, connection.wrap_database_errors:
        for setting in SETTINGS:
            cursor.execute(setting)
        cursor.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {STAGE} (assignment_id bigint, question_id bigint, "
                       "annotator_id bigint, campaign_id bigint, position bigint, choice bigint, time_ms bigint) "
                       "ON COMMIT DROP")
        cursor.execute(f"TRUNCATE {STAGE}")
        with cursor.cursor.copy(f"COPY {STAGE} FROM STDIN (FORMAT binary)") as copy:
            copy.write(_HEADER)
            for start in range(0, n, CHUNK):
                copy.write(_binary_rows(columns, start, min(n, start + CHUNK)))
            copy.write(_TRAILER)
        cursor.execute(f"ANALYZE {STAGE}")
        # The counters first: the UPDATE locks every question the answers name (a stronger lock than the
        # foreign key's), and its row count says whether all of them exist.
        cursor.execute(
            f"UPDATE {q(Question._meta.db_table)} q SET required = GREATEST(q.required, q.assigned + v.n), "
            "assigned = q.assigned + v.n, completed = q.completed + v.n "
            f"FROM (SELECT question_id, count(*) AS n FROM {STAGE} GROUP BY question_id) v WHERE q.id = v.question_id")
        updated = cursor.rowcount
        skip = _triggers_skippable(cursor)
        if skip:
            cursor.execute(f"SELECT count(DISTINCT question_id) FROM {STAGE}")
            if cursor.fetchone()[0] != updated:
                raise IntegrityError(f"Some of the import's question_id values name no row of {Question._meta.db_table}.")
            for model, column in ((Campaign, "campaign_id"), (Annotator, "annotator_id"), (Assignment, "assignment_id")):
                _references_verified(cursor, q(model._meta.db_table), column)
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            f"INSERT INTO {q(AssignmentItem._meta.db_table)} (assignment_id, question_id, annotator_id, position, status) "
            f"SELECT assignment_id, question_id, annotator_id, position, %s FROM {STAGE} "
            "ORDER BY assignment_id, position", [AssignmentItem.Status.ANSWERED.value])
        cursor.execute(
            f"INSERT INTO {q(Answer._meta.db_table)} (campaign_id, question_id, annotator_id, assignment_id, choice, "
            f"time_ms, source, created_at) SELECT campaign_id, question_id, annotator_id, assignment_id, "
            f"(%s::text[])[choice + 1], time_ms, %s, %s FROM {STAGE} ORDER BY assignment_id, position",
            [choices, source, now])
        if skip:
            cursor.execute("SET LOCAL session_replication_role = origin")
        cursor.execute(f"TRUNCATE {STAGE}")
