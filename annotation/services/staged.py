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

from datetime import datetime

import numpy as np
from django.db import connection

from ..models import Answer, AssignmentItem, Question

STAGE = "annotation_import_stage"
CHUNK = 250_000  # answers per COPY buffer (~15 MB)

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


def staged_answers_write(*, assignment: np.ndarray, question: np.ndarray, annotator: np.ndarray,
                         campaign: np.ndarray, position: np.ndarray, choice: np.ndarray, choices: list[str],
                         time_ms: np.ndarray, source: str, now: datetime) -> None:
    """Leases (answered), answers and counters of one import, in the caller's transaction. One entry
    per answer in each array; `choice` indexes `choices`. A question answered by more workers than
    its R gets R raised to that number (as the portable twin does)."""
    columns = {"assignment": assignment, "question": question, "annotator": annotator, "campaign": campaign,
               "position": position, "choice": choice, "time_ms": time_ms}
    n = len(question)
    q = connection.ops.quote_name
    with connection.cursor() as cursor, connection.wrap_database_errors:
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
        cursor.execute(
            f"INSERT INTO {q(AssignmentItem._meta.db_table)} (assignment_id, question_id, annotator_id, position, status) "
            f"SELECT assignment_id, question_id, annotator_id, position, %s FROM {STAGE} "
            "ORDER BY assignment_id, position", [AssignmentItem.Status.ANSWERED.value])
        cursor.execute(
            f"INSERT INTO {q(Answer._meta.db_table)} (campaign_id, question_id, annotator_id, assignment_id, choice, "
            f"time_ms, source, created_at) SELECT campaign_id, question_id, annotator_id, assignment_id, "
            f"(%s::text[])[choice + 1], time_ms, %s, %s FROM {STAGE} ORDER BY assignment_id, position",
            [choices, source, now])
        cursor.execute(
            f"UPDATE {q(Question._meta.db_table)} q SET required = GREATEST(q.required, q.assigned + v.n), "
            "assigned = q.assigned + v.n, completed = q.completed + v.n "
            f"FROM (SELECT question_id, count(*) AS n FROM {STAGE} GROUP BY question_id) v WHERE q.id = v.question_id")
        cursor.execute(f"TRUNCATE {STAGE}")
