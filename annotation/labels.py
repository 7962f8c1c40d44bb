"""The majority rule: majority-vote labels stored per question (AggregatedLabel), kept current as
answers arrive. Both halves live here: :func:`labels_recompute` (the ORM, the reference, run by
every caller but the PostgreSQL submit) and :func:`labels_write` (one prepared statement, the
PostgreSQL submit's); `tests/annotation/test_engine_pg.py` holds them equal on random data.

Tie policy ("tie", the only one stored): when two or more choices share the highest vote count the
stored label is the literal string "tie" with `tie=True`; the vote counts are kept, so the metrics
layer can apply its own policy (the paper counts a tie like "Cannot identify"; the excluded variant
drops it) and always report how many there were. Ties are never broken at random here.

Which answers count: the latest answer of each (question, annotator) (a correction replaces the
answer it `corrects`), excluding gold questions (they measure annotators, not images) and, when the
campaign's `exclude_flagged_answers` is on, answers of annotators whose enrollment is blocked.
Dawid-Skene lives in the metrics layer (annotation must not import metrics).
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Count
from django.utils import timezone

from . import prepared
from .models import AggregatedLabel, Answer, Enrollment

TIE = "tie"


def majority_label(votes: Mapping[str, int]) -> tuple[str, bool]:
    """(label, tie) for a {choice: count} mapping: the unique most frequent choice, or ("tie", True)."""
    if not votes:
        return "", False
    top = max(votes.values())
    winners = [choice for choice, n in votes.items() if n == top]
    if len(winners) > 1:
        return TIE, True
    return winners[0], False


def labels_recompute(*, campaign_id: int, question_ids: Iterable[int] | None = None,
                     exclude_blocked: bool = True) -> int:
    """Recompute the majority label of the given questions (all of the campaign's when None) in two
    queries (votes grouped by question and choice, one upsert). Questions with no counted answer lose
    their label. Returns the number of labels written."""
    answers = Answer.objects.filter(campaign_id=campaign_id, corrected_by__isnull=True, question__is_gold=False)
    ids: list[int] = []
    if question_ids is not None:
        ids = list(question_ids)
        if not ids:
            return 0
        answers = answers.filter(question_id__in=ids)
    if exclude_blocked:
        blocked = Enrollment.objects.filter(campaign_id=campaign_id, status=Enrollment.Status.BLOCKED)
        answers = answers.exclude(annotator_id__in=blocked.values("annotator_id"))
    votes: dict[int, dict[str, int]] = defaultdict(dict)
    for qid, choice, n in answers.values_list("question_id", "choice").annotate(n=Count("id")).order_by():
        votes[qid][choice] = n
    now = timezone.now()
    rows = []
    for qid, counts in votes.items():
        label, tie = majority_label(counts)
        rows.append(AggregatedLabel(question_id=qid, method="majority", label=label, votes=dict(sorted(counts.items())),
                                    answers=sum(counts.values()), tie=tie, updated_at=now))
    if rows:
        AggregatedLabel.objects.bulk_create(rows, update_conflicts=True, unique_fields=["question"],
                                            update_fields=["method", "label", "votes", "answers", "tie", "updated_at"])
    stale = AggregatedLabel.objects.filter(question__campaign_id=campaign_id).exclude(question_id__in=list(votes))
    if question_ids is not None:
        stale = stale.filter(question_id__in=ids)
        if len(votes) < len(ids):
            stale.delete()
    else:
        stale.delete()
    return len(rows)


# labels_recompute's rules in one statement: the newest answer of each chain, blocked annotators'
# answers left out when asked, ties stored as "tie", labels without a counted answer deleted. The
# campaign's blocked annotators are read once per statement, from their partial index
# (`enrollment_blocked_idx`), and hashed: as a lookup per answer the planner scanned the enrollments of
# a small table once for each of a HIT's ~30 answers (0.3 ms of a 1.3 ms statement, bench/README.md
# section 1, "Eighth round"). The given
# questions' answers come from one lateral subquery per question (OFFSET 0 keeps it from being flattened
# into a join), which can only be an index lookup: as `question_id = ANY(...)` over the table, statistics
# of a nearly empty answer table (analysed after a TRUNCATE, autovacuum off) made the cached plan scan
# every answer on every submit (tests/annotation/test_engine_pg.py, bench/README.md section 1).
_GIVEN = """    SELECT an.id, an.question_id, an.annotator_id, an.choice, an.corrects_id
    FROM (SELECT DISTINCT unnest((SELECT %(questions)s::bigint[])) AS id) wanted
    CROSS JOIN LATERAL (SELECT a.id, a.question_id, a.annotator_id, a.choice, a.corrects_id
                        FROM annotation_answer a WHERE a.question_id = wanted.id OFFSET 0) an
    JOIN annotation_question q ON q.id = an.question_id
    WHERE q.campaign_id = %(campaign)s AND NOT q.is_gold),"""
LABELS = """
WITH given AS (
    -- Every answer to the given questions, corrections included (a correction answers the question it
    -- corrects): found by the question index, whatever the statistics say.
""" + _GIVEN + """
votes AS (
    SELECT g.question_id, g.choice, count(*) AS n
    FROM given g
    WHERE g.id NOT IN (SELECT corrects_id FROM given WHERE corrects_id IS NOT NULL)
      AND g.annotator_id NOT IN (SELECT b.annotator_id FROM annotation_enrollment b
          WHERE %(exclude_blocked)s AND b.campaign_id = %(campaign)s AND b.status = 'blocked')
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
    WHERE question_id = ANY((SELECT %(questions)s::bigint[])::bigint[]) AND question_id NOT IN (SELECT question_id FROM labels))
SELECT count(*) FROM written"""


# LABELS for a bulk import's hundreds of thousands of questions: the same rules, with anti-joins the
# planner hashes or answers from an index (`NOT IN (subquery)` over a CTE larger than work_mem is
# rescanned for every row: quadratic at a million answers).
LABELS_BULK = LABELS.replace(_GIVEN, """    SELECT an.id, an.question_id, an.annotator_id, an.choice, an.corrects_id
    FROM annotation_answer an JOIN annotation_question q ON q.id = an.question_id
    WHERE an.question_id = ANY(%(questions)s::bigint[]) AND q.campaign_id = %(campaign)s AND NOT q.is_gold
      AND NOT EXISTS (SELECT 1 FROM annotation_answer c WHERE c.corrects_id = an.id AND c.corrects_id IS NOT NULL)
      AND NOT (%(exclude_blocked)s AND an.annotator_id IN (
          SELECT b.annotator_id FROM annotation_enrollment b
          WHERE b.campaign_id = %(campaign)s AND b.status = 'blocked'))),""").replace("""    FROM given g
    WHERE g.id NOT IN (SELECT corrects_id FROM given WHERE corrects_id IS NOT NULL)
      AND g.annotator_id NOT IN (SELECT b.annotator_id FROM annotation_enrollment b
          WHERE %(exclude_blocked)s AND b.campaign_id = %(campaign)s AND b.status = 'blocked')
    GROUP BY""", """    FROM given g
    GROUP BY""").replace(
    "WHERE question_id = ANY((SELECT %(questions)s::bigint[])::bigint[]) AND question_id NOT IN (SELECT question_id FROM labels))",
    "WHERE question_id = ANY(%(questions)s::bigint[])\n      AND NOT EXISTS (SELECT 1 FROM labels l WHERE l.question_id = annotation_aggregatedlabel.question_id))")
assert LABELS_BULK.count("NOT EXISTS") == 2 and "NOT IN" not in LABELS_BULK and "LATERAL" not in LABELS_BULK


def labels_write(*, campaign_id: int, question_ids: Sequence[int], exclude_blocked: bool, now: datetime) -> int:
    """:func:`labels_recompute` for the given questions as one prepared statement (PostgreSQL only).
    Returns the number of labels written."""
    rows = prepared.run(LABELS, {"campaign": campaign_id, "questions": list(question_ids),
                                 "exclude_blocked": exclude_blocked, "now": now})
    return int(rows[0][0])


def labels_write_bulk(*, campaign_id: int, question_ids: Sequence[int], exclude_blocked: bool, now: datetime) -> int:
    """:func:`labels_write` for a bulk import's many questions (LABELS_BULK). Returns the number of
    labels written. Planned without nested loops (for this statement only): the answers an import has
    just written in its own transaction are not in the table's statistics, so the planner expects one
    row and looked each of a million answers' questions up by the primary key (1M answers: ~4 s of
    ~16 s) where a hash join reads the questions once (bench/README.md section 2)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_nestloop'), set_config('enable_nestloop', 'off', true)")
        before = cursor.fetchone()[0]
        rows = prepared.run(LABELS_BULK, {"campaign": campaign_id, "questions": list(question_ids),
                                          "exclude_blocked": exclude_blocked, "now": now})
        # Set back only after success: an error rolls the transaction (or its savepoint) back, and the
        # setting with it.
        cursor.execute("SELECT set_config('enable_nestloop', %s, true)", [before])
    return int(rows[0][0])


# LABELS, answering with what adaptive redundancy decides on: each given question's required and
# completed counters, its number of choices and its new votes (NULL when no answer counts). The
# data-modifying CTEs run to completion whatever the final SELECT reads.
LABELS_COUNTS = LABELS.replace("SELECT count(*) FROM written", """SELECT q.id, q.required, q.completed, jsonb_array_length(q.choices), l.votes
FROM annotation_question q LEFT JOIN labels l ON l.question_id = q.id
WHERE q.id = ANY((SELECT %(questions)s::bigint[])::bigint[]) ORDER BY q.id""")


def labels_write_counts(*, campaign_id: int, question_ids: Sequence[int], exclude_blocked: bool,
                        now: datetime) -> list[tuple[int, int, int, int, dict[str, int] | None]]:
    """:func:`labels_write`, returning (id, required, completed, choices, votes) per question (one
    statement): the adaptive submit's input to `annotation.redundancy.questions_to_grow`."""
    rows = prepared.run(LABELS_COUNTS, {"campaign": campaign_id, "questions": list(question_ids),
                                        "exclude_blocked": exclude_blocked, "now": now})
    return [(r[0], r[1], r[2], r[3], json.loads(r[4]) if isinstance(r[4], str) else r[4]) for r in rows]


def label_summary(*, campaign_id: int) -> dict[str, Any]:
    """Counts of stored labels, ties included (reported, never hidden)."""
    qs = AggregatedLabel.objects.filter(question__campaign_id=campaign_id, question__is_gold=False)
    total = qs.count()
    ties = qs.filter(tie=True).count()
    return {"labels": total, "labels_tied": ties}
