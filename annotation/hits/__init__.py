"""The HIT engine: an annotator asks for a HIT (k questions leased for a while), keeps it alive,
gives it back, or submits its answers. Import the public functions from here.

Layout: `rules.py` (pure: pool order, HIT composition, payload, submission checks, reward), `orm.py`
(the portable engine, the reference), `pg.py` (the hot paths as prepared SQL on PostgreSQL). The
switch is one question, :func:`engine_sql`: `common.fastpath.enabled("hit_engine")`. Leases are given
back by `annotation.services.leases` (shared with the quality services, which release the HITs of a
paused or blocked annotator).
"""
from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from django.db import OperationalError, transaction

from common import fastpath

from ..models import Annotator, Assignment
from . import orm, pg
from .orm import assignment_payload
from .rules import HitPayload, SubmitResult

__all__ = ["answers_submit", "answers_submitted", "assignment_heartbeat", "assignment_next", "assignment_payload",
           "assignment_return", "engine_sql"]

P = ParamSpec("P")
T = TypeVar("T")


def engine_sql() -> bool:
    """Whether next and submit run as prepared SQL (`pg.py`): on PostgreSQL unless the `hit_engine`
    fast path is off (common/fastpath.py); the ORM engine (`orm.py`) otherwise."""
    return fastpath.enabled("hit_engine")


def _retry_on_deadlock(fn: Callable[P, T]) -> Callable[P, T]:
    """Retry a whole transaction a few times when PostgreSQL picks it as a deadlock victim or
    reports a serialization failure; both are transient under heavy concurrency."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        for attempt in range(4):
            try:
                return fn(*args, **kwargs)
            except OperationalError as exc:
                name = type(exc.__cause__).__name__
                if attempt == 3 or name not in ("DeadlockDetected", "SerializationFailure"):
                    raise
        raise AssertionError("unreachable")

    return wrapper


@_retry_on_deadlock
@transaction.atomic
def assignment_next(*, annotator: Annotator, campaign_id: int, rng: random.Random | None = None
                    ) -> tuple[HitPayload | None, bool]:
    """Give the annotator a HIT in the campaign: (payload, created). (None, False) when nothing is
    left for them; their active unexpired HIT (created False) when they hold one.

    Rules: every question gets exactly `required` distinct annotators; leases count toward it; an
    annotator never gets a question twice; only families they are qualified for; questions nearest
    to completion first, questions already started before fresh ones (`rules.POOL_ORDER`); PST HITs
    hold whole images; gold questions take `gold_rate` of the HIT's `hit_size` seats (never more
    questions than hit_size), drawn in the annotator's own order (`rules.gold_salt`), at random
    positions (`rules.hit_compose`).

    Locking precondition (the whole function is one transaction):
      1. expired leases of the campaign are reclaimed first (SKIP LOCKED on the assignments);
      2. the annotator's enrollment row is locked (FOR NO KEY UPDATE): one annotator's concurrent
         requests are serialised, so the NOT EXISTS "not seen" test cannot race itself;
      3. candidate questions are locked with SELECT ... FOR NO KEY UPDATE SKIP LOCKED: concurrent
         annotators take different rows instead of queueing, and PostgreSQL re-checks
         `assigned < required` on the row version it locks, so a question is never over-assigned;
      4. AssignmentItems are bulk-inserted and `assigned = assigned + 1` is one UPDATE on the locked rows.
    The database backs this up: CHECK assigned <= required and UNIQUE (question, annotator).
    On SQLite there is no row locking: the first statement (the reclaim) is a write under
    `transaction_mode=IMMEDIATE` (settings), so the whole database is held by one writer at a time.
    Statements (tests/annotation/test_query_counts.py holds them exact; BEGIN/COMMIT aside): prepared
    SQL 3, ORM 8; +1 with gold questions; +4 when leases expired (their release); a held HIT: SQL 3,
    ORM 4; nothing left: SQL 3, ORM 5.
    """
    rng = rng or random.Random()
    if engine_sql():
        return pg.next_hit(annotator=annotator, campaign_id=campaign_id, rng=rng)
    return orm.next_hit(annotator=annotator, campaign_id=campaign_id, rng=rng)


def answers_submit(*, annotator: Annotator, assignment_id: int, answers: Any) -> tuple[SubmitResult, bool]:
    """Store the answers of a HIT: (result, duplicate).

    All or nothing in one transaction: validate (every question of the HIT, allowed choices, no
    extras or duplicates), insert the answers, items -> answered, `completed + 1`, the HIT ->
    submitted with its reward, majority labels of the touched questions, and the annotator's quality
    check. The same submission twice is one (digest of the choices; duplicate=True), a different
    one is a 409. A late submission (lease expired and reclaimed) is accepted only if every released
    question still has room: `assigned + 1` is re-taken with `assigned < required` in one UPDATE,
    otherwise 409. Locks the assignment row first (a concurrent reclaim skips it).
    Statements (held exact by tests/annotation/test_query_counts.py; BEGIN/COMMIT aside): prepared
    SQL 3, ORM 8; a late submission +2 SQL (items read again, re-take), +1 ORM (re-take); a quality
    threshold set +2 SQL (campaign, stats), +1 ORM (stats); a resend SQL 1, ORM 2; adaptive
    redundancy +1 ORM (the counters and votes read back; SQL reads them in the labels statement), and
    +1 both when some question's `required` grows (`annotation.redundancy`: all its wanted answers in,
    majority not settled, under `max`: `required + 1` on the rows the counters' UPDATE locked).
    """
    result, duplicate, _ = answers_submitted(annotator=annotator, assignment_id=assignment_id, answers=answers)
    return result, duplicate


@_retry_on_deadlock
@transaction.atomic
def answers_submitted(*, annotator: Annotator, assignment_id: int, answers: Any) -> tuple[SubmitResult, bool, int]:
    """:func:`answers_submit` (the same transaction, rules and statements) that also says the HIT's
    campaign: (result, duplicate, campaign id). A submit that asks for the next HIT
    (`apis.AssignmentSubmitApi`, `"next": true`) takes it from that campaign once this has committed."""
    if engine_sql():
        return pg.submit(annotator=annotator, assignment_id=assignment_id, answers=answers)
    return orm.submit(annotator=annotator, assignment_id=assignment_id, answers=answers)


@transaction.atomic
def assignment_heartbeat(*, annotator: Annotator, assignment_id: int) -> Assignment:
    """Extend the lease of an active HIT by the campaign's lease length (from now). Locks the HIT row;
    404 for another annotator's HIT, 409 unless active."""
    return orm.heartbeat(annotator=annotator, assignment_id=assignment_id)


@transaction.atomic
def assignment_return(*, annotator: Annotator, assignment_id: int) -> Assignment:
    """Give an active HIT back unanswered: its questions go back to the pool at once. Locks the HIT row."""
    return orm.give_back(annotator=annotator, assignment_id=assignment_id)
