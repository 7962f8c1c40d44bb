"""The HIT engine's two hot paths in hand-written SQL for PostgreSQL: "next" and "submit".

`annotation.hits` runs these when the `hit_engine` fast path is on (common/fastpath.py); `orm.py`
defines the same behaviour, runs elsewhere (the SQLite demo), and the contract tests hold the two
equal on PostgreSQL. Why: a HIT cycle through the ORM was 18 statements and ~34 ms of CPU on the
2-core benchmark machine, 42% of the Python time spent compiling SQL (profile in bench/README.md).
Here a cycle is

    next:   BEGIN; lock the enrollment + campaign state + held HIT + unqualified families + expired
            leases (1); the pool SELECT ... FOR NO KEY UPDATE SKIP LOCKED (2); HIT + leases + counters
            in one data-modifying WITH (3); COMMIT
    submit: BEGIN; lock the HIT + its items (1); answers + leases + counters + HIT in one WITH (2);
            majority labels of the touched questions (3, `annotation.labels.LABELS`); COMMIT

each a server-side prepared statement (`annotation.prepared.run`). The rules (which questions, in
what order, gold, payload, submission checks, reward) are `rules.py`'s, shared with the ORM engine.

Plans: a prepared statement gets a generic plan after five executions on a connection, made with the
statistics of that moment. The statements are written so that the plan does not hinge on them where
it matters (the pool walks its partial index; labels read answers only through the question index;
live HITs have their own small partial indexes; an array parameter sits behind a scalar subquery,
`(SELECT %(ids)s::bigint[])`, so that a custom plan does not see its length either: see
`annotation.prepared`), but a table that grew a lot since its last ANALYZE
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
import random
from collections.abc import Mapping
from datetime import timedelta
from functools import lru_cache
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from campaigns.models import Campaign
from common.errors import NotFoundError
from generation.selectors import image_url

from .. import prepared
from ..models import Annotator, Assignment
from ..services.annotators import enrollment_check
from ..services.derived import submit_derive_sql
from ..services.leases import assignments_release
from ..services.quality import annotator_quality_check, quality_checked
from ..spec_section import validate_annotation
from . import rules
from .orm import assignment_payload, held_hit
from .rules import Candidate, HitPayload, Item, SubmitResult


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
SELECT e.consented_at IS NOT NULL, e.status, e.status_reason, c.status, c.kind, (c.spec -> 'annotation')::text, c.seed,
       ({HELD_HIT} ORDER BY h.created_at DESC LIMIT 1),
       ARRAY(SELECT q.family FROM annotation_qualification q
             WHERE q.campaign_id = %(campaign)s AND NOT EXISTS (
                 SELECT 1 FROM annotation_qualificationattempt t
                 WHERE t.qualification_id = q.id AND t.annotator_id = %(annotator)s AND t.passed)),
       ARRAY(SELECT id FROM expired ORDER BY id)
FROM annotation_enrollment e JOIN campaigns_campaign c ON c.id = e.campaign_id
WHERE e.campaign_id = %(campaign)s AND e.annotator_id = %(annotator)s AND c.deleted_at IS NULL
FOR NO KEY UPDATE OF e"""

# The pool (orm.next_hit's filter): room left, image not excluded and not an example, a web rendition
# when the image is stored (annotators never get the original: it waits for the sweeper's rendition),
# family qualified, never seen.
_POOL_WHERE = """
FROM annotation_question q JOIN generation_image i ON i.id = q.image_id
WHERE q.campaign_id = %(campaign)s AND q.assigned < q.required AND NOT i.excluded AND q.is_gold = %(gold)s
  AND (i.web_file <> '' OR i.file = '')
  AND NOT EXISTS (SELECT 1 FROM annotation_exampleimage x WHERE x.image_id = q.image_id)
  AND q.family <> ALL(%(unqualified)s::text[])
  AND NOT EXISTS (SELECT 1 FROM annotation_assignmentitem s
                  WHERE s.question_id = q.id AND s.annotator_id = %(annotator)s)"""

# Columns in rules.Candidate's order.
_CANDIDATE = "q.id, q.text, q.choices::json, q.image_id, i.web_file, i.file, i.source_url, q.slot, q.family, q.setting"

# The partial index question_pool_open_idx serves this ORDER BY (rules.POOL_ORDER); the held-HIT test
# is repeated here because this statement's snapshot is taken after the enrollment lock is held.
NEXT_POOL = f"""
SELECT {_CANDIDATE}
{_POOL_WHERE}
  AND NOT EXISTS ({HELD_HIT})
ORDER BY {rules.pool_order_sql("q")}
LIMIT %(limit)s
FOR NO KEY UPDATE OF q SKIP LOCKED"""

# The campaign's common gold order (rules.gold_order_key of rules.gold_common_salt), the ORM's
# `gold_ordered`: the window the annotator's gold seats are picked from (rules.hit_compose).
NEXT_GOLD = f"""
SELECT {_CANDIDATE}
{_POOL_WHERE}
ORDER BY md5(%(salt)s || q.id::text) COLLATE "C", q.id LIMIT %(limit)s"""


assert NEXT_POOL.count("LIMIT %(limit)s") == 1 and NEXT_GOLD.count("LIMIT %(limit)s") == 1


@lru_cache(maxsize=64, typed=True)  # typed: True is not cached as 1
def limited(sql: str, limit: int) -> str:
    """`sql` (NEXT_POOL, NEXT_GOLD) with its LIMIT written in as a number instead of a parameter. With a
    parameter, PostgreSQL's generic plan assumes the LIMIT keeps 10% of the rows, so it always looks
    dearer than a plan for the actual LIMIT and the statement was planned again on every execution
    (pg_prepared_statements: 0 generic, every execution custom; ~0.6-1 ms of PostgreSQL CPU per HIT).
    With the number written in, the generic plan costs what the custom one does and is kept per
    connection. A campaign has one limit (a few across campaigns), so this adds a few prepared statements."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"limit must be a positive int, not {limit!r}")
    return sql.replace("LIMIT %(limit)s", f"LIMIT {limit}")


NEXT_WRITE = """
WITH hit AS (
    INSERT INTO annotation_assignment (campaign_id, annotator_id, status, created_at, expires_at, submitted_at,
        submission_digest, review, review_reason, reviewed_at, reward, bonus, external_assignment_id, external_hit_id)
    VALUES (%(campaign)s, %(annotator)s, 'active', %(now)s, %(expires)s, NULL, '', 'pending', '', NULL, 0, 0, NULL, '')
    RETURNING id),
leases AS (
    INSERT INTO annotation_assignmentitem (assignment_id, question_id, annotator_id, position, status)
    SELECT hit.id, x.question, %(annotator)s, x.position - 1, 'leased'
    FROM hit, unnest((SELECT %(questions)s::bigint[])) WITH ORDINALITY AS x(question, position)),
counters AS (
    UPDATE annotation_question SET assigned = assigned + 1 WHERE id = ANY((SELECT %(real)s::bigint[])::bigint[]))
SELECT id FROM hit"""


def next_hit(*, annotator: Annotator, campaign_id: int, rng: random.Random) -> tuple[HitPayload | None, bool]:
    """`annotation.hits.assignment_next` in three prepared statements (+1 gold, + the release of
    expired leases)."""
    now = timezone.now()
    params: dict[str, Any] = {"campaign": campaign_id, "annotator": annotator.pk, "now": now}
    state = prepared.run(NEXT_STATE, params)
    if not state:
        enrollment_check(campaign_id=campaign_id, consented=False, status="", reason="")
    consented, e_status, e_reason, c_status, kind, section, seed, held, unqualified, expired = state[0]
    if expired:
        assignments_release(expired, status=Assignment.Status.EXPIRED)
    enrollment_check(campaign_id=campaign_id, consented=consented, status=e_status, reason=e_reason)
    rules.refuse_closed(c_status)
    if held is not None:
        return assignment_payload(Assignment.objects.get(pk=held)), False
    cfg = settings_of(kind, section)
    k = cfg["hit_size"]
    pst = kind == Campaign.Kind.PST
    params.update(unqualified=unqualified, gold=False)
    pool = limited(NEXT_POOL, rules.pool_limit(pst=pst, k=k, gold_rate=cfg["gold_rate"]))
    rows = [Candidate(*r) for r in prepared.run(pool, params)]
    if not rows:
        # Empty, or a concurrent request of this annotator made a HIT while this one waited for the lock.
        current = held_hit(annotator=annotator, campaign_id=campaign_id, now=now)
        return (assignment_payload(current), False) if current is not None else (None, False)

    def gold(n: int) -> list[Candidate]:
        salt = rules.gold_common_salt(campaign_seed=seed)
        return [Candidate(*r) for r in prepared.run(limited(NEXT_GOLD, n), {**params, "gold": True, "salt": salt})]

    questions, real_ids = rules.hit_compose(rows, pst=pst, k=k, gold_rate=cfg["gold_rate"], rng=rng, gold=gold,
                                            salt=rules.gold_salt(campaign_seed=seed, annotator_id=annotator.pk))
    expires = now + timedelta(minutes=cfg["lease_minutes"])
    hit_id = prepared.run(NEXT_WRITE, {**params, "expires": expires, "real": real_ids,
                                       "questions": [q.id for q in questions]})[0][0]
    return rules.hit_payload(hit_id=hit_id, expires_at=expires, questions=questions, image_url=image_url), True


# ---------------------------------------------------------------------------------------------
# submit
# ---------------------------------------------------------------------------------------------
_ITEMS = """
    SELECT json_agg(json_build_array(it.question_id, it.status, q.choices, q.is_gold) ORDER BY it.position)
    FROM annotation_assignmentitem it JOIN annotation_question q ON q.id = it.question_id
    WHERE it.assignment_id = %(assignment)s"""

SUBMIT_STATE = f"""
SELECT a.status, a.submission_digest, a.submitted_at, a.reward, a.campaign_id, c.kind,
       (c.spec -> 'annotation')::text, ({_ITEMS}), c.deleted_at IS NOT NULL
FROM annotation_assignment a JOIN campaigns_campaign c ON c.id = a.campaign_id
WHERE a.id = %(assignment)s AND a.annotator_id = %(annotator)s
FOR NO KEY UPDATE OF a"""

SUBMIT_ITEMS = _ITEMS

SUBMIT_WRITE = """
WITH answers AS (
    INSERT INTO annotation_answer (campaign_id, question_id, annotator_id, assignment_id, choice, time_ms,
                                   created_at, corrects_id, source)
    SELECT %(campaign)s, x.question, %(annotator)s, %(assignment)s, x.choice, x.time_ms, %(now)s, NULL, 'web'
    FROM unnest((SELECT %(questions)s::bigint[]), (SELECT %(choices)s::text[]), (SELECT %(times)s::integer[]))
         AS x(question, choice, time_ms)),
leases AS (
    UPDATE annotation_assignmentitem SET status = 'answered' WHERE assignment_id = %(assignment)s),
counters AS (
    UPDATE annotation_question SET completed = completed + 1 WHERE id = ANY((SELECT %(real)s::bigint[])::bigint[]))
UPDATE annotation_assignment SET status = 'submitted', submitted_at = %(now)s, submission_digest = %(digest)s,
       reward = %(reward)s
WHERE id = %(assignment)s"""

# Late submission: re-take `assigned + 1` on every released question that still has room.
SUBMIT_RETAKE = """
WITH taken AS (
    UPDATE annotation_question SET assigned = assigned + 1
    WHERE id = ANY((SELECT %(questions)s::bigint[])::bigint[]) AND assigned < required RETURNING 1)
SELECT count(*) FROM taken"""


def submit(*, annotator: Annotator, assignment_id: int, answers: object) -> tuple[SubmitResult, bool, int]:
    """`annotation.hits.answers_submit` in three prepared statements (+1 late re-take, +1 when the HIT
    had expired, + the quality check when a threshold is set): (result, duplicate, the HIT's campaign)."""
    params: dict[str, Any] = {"assignment": assignment_id, "annotator": annotator.pk}
    state = prepared.run(SUBMIT_STATE, params)
    if not state:
        raise NotFoundError(f"Assignment {assignment_id} not found.")
    status, digest0, submitted_at, reward0, campaign_id, kind, section, items_json, deleted = state[0]
    rules.refuse_deleted(deleted=deleted, campaign_id=campaign_id)
    if status == Assignment.Status.EXPIRED:
        # A reclaim may have committed while this statement waited for the lock: its snapshot of the
        # items is older than the HIT row it locked. Read them again.
        items_json = prepared.run(SUBMIT_ITEMS, params)[0][0]
    items = [Item(*row) for row in items_json or []]
    parsed, digest, early = rules.submit_check(assignment_id=assignment_id, status=status, digest=digest0,
                                               submitted_at=submitted_at, reward=reward0, items=items,
                                               answers=answers,
                                               blind=settings_of(kind, section) if annotator.is_link_account else None)
    if early is not None:
        return early, True, campaign_id
    released = rules.released(items)
    if released:
        rules.retaken_check(prepared.run(SUBMIT_RETAKE, {"questions": released})[0][0], released)
    cfg = settings_of(kind, section)
    now = timezone.now()
    real_ids = rules.real_ids(items)
    reward = rules.reward(cfg, len(parsed))
    try:
        prepared.run(SUBMIT_WRITE, {
            **params, "campaign": campaign_id, "now": now, "digest": digest, "reward": reward, "real": real_ids,
            "questions": [p.question for p in parsed], "choices": [p.choice for p in parsed],
            "times": [p.time_ms for p in parsed]})
    except IntegrityError as exc:  # an original answer exists already (e.g. imported): never overwrite
        raise rules.already_answered() from exc
    submit_derive_sql(campaign_id=campaign_id, question_ids=real_ids, cfg=cfg, now=now)
    if quality_checked(cfg):
        annotator_quality_check(campaign=Campaign.objects.get(pk=campaign_id), annotator=annotator, cfg=cfg)
    return rules.submit_result(id=assignment_id, status=Assignment.Status.SUBMITTED, submitted_at=now,
                               reward=reward, answers=len(parsed)), False, campaign_id
