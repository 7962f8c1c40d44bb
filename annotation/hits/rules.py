"""The HIT engine's rules, pure: no database, no clock, no randomness but the `rng` passed in.

Both engines (`orm.py`, the portable reference, and `pg.py`, PostgreSQL's prepared SQL) read rows,
hand them to these functions and write what they decide, so a rule changes in one place:

- the pool: which questions may go into a HIT (:data:`POOL_ORDER`, :func:`pool_limit`; the predicate
  itself, `assigned < required`, not seen, family qualified, image not excluded nor an example, is each engine's
  WHERE clause, side by side in `orm.next_hit` and `pg.NEXT_POOL`);
- the HIT: whole images for PST, gold questions mixed in (:func:`hit_compose`);
- the payload an annotator sees (:func:`hit_payload`);
- a submission: parsing, the resend digest, the checks against the HIT's state, the reward
  (:func:`submit_check`, :func:`reward`).

Gold questions sit inside `hit_size` (:func:`hit_compose`), at random positions; with gold on, real
and gold questions alike are picked in the annotator's own order (:func:`gold_salt`) from windows
WINDOW times the seats (:func:`pool_limit`, :func:`gold_window`), so colluding accounts cannot tell
gold by comparing their HITs. Adaptive redundancy (`annotation/redundancy.py`)
keeps the `assigned < required` predicate: `required` grows by one at submit while a question's
majority is not settled, and :data:`POOL_ORDER` hands out questions already started first
("finish what is open").
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple, TypedDict

from common.errors import ApplicationError, ConflictError, NotFoundError

from ..families import example_family

# Status values of the engine's rows (the models' TextChoices hold the same strings); spelled out so
# this module needs no Django model.
ACTIVE, SUBMITTED, EXPIRED, RETURNED = "active", "submitted", "expired", "returned"
LEASED, ANSWERED, RELEASED = "leased", "answered", "released"
OPEN = "open"

# The order the pool hands questions out in: nearest to completion first, then the seeded order key
# (a campaign stopped early has complete items); (column, descending). Both engines render it, and the
# partial index `question_pool_open_idx` serves exactly this order.
POOL_ORDER: tuple[tuple[str, bool], ...] = (
    ("assigned", True), ("completed", True), ("order_key", False), ("image_id", False), ("slot", False))

# Persons of a paired image in reading order.
SLOT_ORDER = {"left": 0, "right": 1, "single": 2}

MAX_TIME_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class Candidate:
    """A question as the engines read it from the pool: what the annotator sees, plus its image's
    storage keys and its slot (PST HITs keep an image's persons together)."""

    id: int
    text: str
    choices: list[str]
    image_id: int
    web_file: str
    file: str
    source_url: str
    slot: str
    family: str = ""
    setting: str = ""


@dataclass(frozen=True, slots=True)
class Item:
    """One lease of a HIT as submit reads it."""

    question_id: int
    status: str
    choices: list[str]
    is_gold: bool


class ParsedAnswer(NamedTuple):
    question: int
    choice: str
    time_ms: int | None


class QuestionPayload(TypedDict):
    id: int
    image_url: str
    text: str
    choices: list[str]
    family: str  # the example family (annotation.families): which instructions and examples apply


class HitPayload(TypedDict):
    """The HIT as the annotator sees it: nothing about prompt, gender, model or other answers."""

    id: int
    expires_at: datetime
    questions: list[QuestionPayload]


class SubmitResult(TypedDict):
    id: int
    status: str
    answers: int
    submitted_at: datetime | None
    reward: str


ImageUrl = Callable[..., str]
GoldDraw = Callable[[int], list[Candidate]]


# ---------------------------------------------------------------------------------------------
# next
# ---------------------------------------------------------------------------------------------
def pool_order_fields() -> list[str]:
    """:data:`POOL_ORDER` as ORM `order_by` arguments."""
    return [f"-{column}" if descending else column for column, descending in POOL_ORDER]


def pool_order_sql(alias: str) -> str:
    """:data:`POOL_ORDER` as an SQL ORDER BY list on the question table `alias`."""
    return ", ".join(f"{alias}.{column}{' DESC' if descending else ''}" for column, descending in POOL_ORDER)


# Collusion (docs/security.md, "Gold that collusion cannot find"): with gold on, each seat of a HIT
# is drawn from WINDOW candidates, real and gold alike, in the annotator's own order, so two accounts
# share a real question as often as a gold one and the questions that differ between their HITs are
# gold at the campaign's gold rate.
WINDOW = 3


def pool_limit(*, pst: bool, k: int, gold_rate: float = 0.0) -> int:
    """How many candidate rows to lock for a HIT of `k`: without gold `k`; with gold WINDOW times the
    real seats a HIT has on average (at least `k`). PST reads twice as many (an image has up to two
    persons)."""
    seats = k if gold_rate <= 0 else max(k, math.ceil(WINDOW * k * (1 - gold_rate)))
    return seats * 2 if pst else seats


def gold_window(*, k: int, gold_rate: float) -> int:
    """How many gold candidates (in the campaign's common gold order, unseen by the annotator) a HIT's
    gold seats are drawn from: WINDOW times the gold seats on average, at least the most a HIT takes."""
    return max(math.ceil(k * gold_rate), round(WINDOW * k * gold_rate))


def refuse_closed(status: str) -> None:
    """No new HITs unless the campaign is open (409 naming its status)."""
    if status != OPEN:
        raise ConflictError(f"The campaign is {status}; no new HITs are handed out.", errors={"campaign": [status]})


def whole_images(rows: Sequence[Candidate], *, k: int) -> list[Candidate]:
    """PST: the first `k` distinct images of the locked rows, all their persons found (both of a
    paired image unless the other one is locked, full or already seen), kept next to each other."""
    first_seen: dict[int, int] = {}
    for r in rows:
        if r.image_id not in first_seen and len(first_seen) < k:
            first_seen[r.image_id] = len(first_seen)
    kept = [r for r in rows if r.image_id in first_seen]
    kept.sort(key=lambda r: (first_seen[r.image_id], SLOT_ORDER.get(r.slot, 3)))
    return kept


def gold_count(*, k: int, gold_rate: float, rng: random.Random) -> int:
    """How many of a HIT's `k` seats go to gold questions: `gold_rate` of the HIT in expectation (k *
    gold_rate rounded up with the probability of its remainder), at most k - 1 (a HIT always asks at
    least one real question, so hit_size 1 has no gold). Draws from `rng` only when gold is on."""
    if gold_rate <= 0 or k < 2:
        return 0
    expected = k * gold_rate
    n = int(expected) + (1 if rng.random() < expected - int(expected) else 0)
    return min(n, k - 1)


def gold_salt(*, campaign_seed: int, annotator_id: int) -> str:
    """The prefix of an annotator's own order: md5(salt || id) ranks the real questions (by image for
    PST) and the gold questions of a window, a different, fixed order per annotator and campaign."""
    return f"gold:{campaign_seed}:{annotator_id}:"


def gold_common_salt(*, campaign_seed: int) -> str:
    """The prefix of the campaign's common gold order (every annotator's gold window, in SQL)."""
    return f"gold:{campaign_seed}:"


def own_order(rows: Sequence[Candidate], salt: str, *, by_image: bool = False) -> list[Candidate]:
    """`rows` in the annotator's own order (:func:`gold_order_key` of the id, or of the image id,
    persons of an image in reading order)."""
    return sorted(rows, key=lambda r: (gold_order_key(salt, r.image_id if by_image else r.id),
                                       SLOT_ORDER.get(r.slot, 3) if by_image else 0, r.id))


def gold_order_key(salt: str, question_id: int) -> str:
    """:func:`gold_salt`'s order key of a question (what both engines sort by, in SQL)."""
    return hashlib.md5(f"{salt}{question_id}".encode()).hexdigest()  # noqa: S324 - an order, not a secret


def _boundaries(rows: Sequence[Candidate], *, pst: bool) -> list[int]:
    """Where a gold question may go: anywhere (GEP), between images (PST keeps a pair together)."""
    return [i for i in range(len(rows) + 1)
            if not pst or i in (0, len(rows)) or rows[i - 1].image_id != rows[i].image_id]


def gold_insert(rows: list[Candidate], gold: Iterable[Candidate], *, rng: random.Random,
                pst: bool = False) -> list[Candidate]:
    """Gold questions at random positions (drawn from `rng`, one per HIT), indistinguishable in the
    payload (silent)."""
    out = list(rows)
    for g in gold:
        out.insert(rng.choice(_boundaries(out, pst=pst)), g)
    return out


def hit_compose(rows: Sequence[Candidate], *, pst: bool, k: int, gold_rate: float, rng: random.Random,
                gold: GoldDraw, salt: str | None = None) -> tuple[list[Candidate], list[int]]:
    """The HIT's questions in order, from the locked pool rows: gold questions take seats INSIDE the
    HIT's `k` (a HIT never has more than `k` questions, GEP, or `k` images, PST), drawn with `gold(n)`
    from the annotator's own gold order (fewer when they have seen them all), real questions in the
    remaining seats (PST images whole), gold
    at random positions. With `salt` (the engines: :func:`gold_salt`) the real rows (a window of
    :func:`pool_limit`) and the gold candidates (a window of :func:`gold_window` in the campaign's
    common order) are taken in the annotator's own order (:func:`own_order`), so comparing HITs of
    colluding accounts tells gold from real no better than the gold rate. Returns (questions, ids of the non-gold questions, whose counters the engine
    increments)."""
    n_gold = gold_count(k=k, gold_rate=gold_rate, rng=rng)
    if salt is None:  # the pool's own order (the rules' unit tests)
        drawn = gold(n_gold) if n_gold else []
    else:  # the annotator's own picks from the windows (collusion: module constants above)
        drawn = own_order(gold(gold_window(k=k, gold_rate=gold_rate)), salt)[:n_gold] if n_gold else []
        rows = own_order(rows, salt, by_image=pst)
    seats = k - len(drawn)
    chosen = whole_images(rows, k=seats) if pst else list(rows)[:seats]
    real_ids = [r.id for r in chosen]
    if drawn:
        chosen = gold_insert(chosen, drawn, rng=rng, pst=pst)
    return chosen, real_ids


def question_payload(row: Candidate, *, image_url: ImageUrl) -> QuestionPayload:
    # The web rendition, or the URL an image was registered by; never the stored original.
    return {"id": row.id, "image_url": image_url(web_file=row.web_file, source_url="" if row.file else row.source_url),
            "text": row.text, "choices": row.choices, "family": example_family(row.family, row.setting)}


def hit_payload(*, hit_id: int, expires_at: datetime, questions: Iterable[Candidate],
                image_url: ImageUrl) -> HitPayload:
    """The HIT as the annotator sees it: {"id", "expires_at", "questions": [{id, image_url, text, choices,
    family}]}."""
    return {"id": hit_id, "expires_at": expires_at,
            "questions": [question_payload(q, image_url=image_url) for q in questions]}


# ---------------------------------------------------------------------------------------------
# submit
# ---------------------------------------------------------------------------------------------
def answers_parse(answers: Any, items: Sequence[Item]) -> list[ParsedAnswer]:
    """Validate a submission against the HIT's items; 400 naming every problem, nothing saved."""
    if not isinstance(answers, list):
        raise ApplicationError("answers must be a list of {question, choice, time_ms}.",
                               errors={"answers": ["Must be a list."]})
    by_question = {it.question_id: it for it in items}
    errors: dict[str, list[str]] = {}
    seen: set[int] = set()
    parsed: list[ParsedAnswer] = []
    for index, entry in enumerate(answers):
        path = f"answers.{index}"
        if not isinstance(entry, Mapping):
            errors[path] = ["Must be an object {question, choice, time_ms}."]
            continue
        qid, choice, time_ms = entry.get("question"), entry.get("choice"), entry.get("time_ms")
        if isinstance(qid, bool) or not isinstance(qid, int):
            errors[f"{path}.question"] = [f"must be a question id (integer), got {qid!r}"]
            continue
        if qid not in by_question:
            errors[f"{path}.question"] = [f"question {qid} is not in this HIT"]
            continue
        if qid in seen:
            errors[f"{path}.question"] = [f"question {qid} is answered more than once"]
            continue
        seen.add(qid)
        allowed = by_question[qid].choices
        if not isinstance(choice, str) or choice not in allowed:
            errors[f"{path}.choice"] = [f"{choice!r} is not one of {allowed}"]
        if time_ms is not None and (isinstance(time_ms, bool) or not isinstance(time_ms, int)
                                    or not 0 <= time_ms <= MAX_TIME_MS):
            errors[f"{path}.time_ms"] = [f"must be a non-negative integer (milliseconds), got {time_ms!r}"]
        parsed.append(ParsedAnswer(qid, choice, time_ms))  # type: ignore[arg-type]  # errors raised below
    missing = [qid for qid in by_question if qid not in seen]
    if missing:
        errors.setdefault("answers", []).append(f"missing answers for questions {sorted(missing)}")
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid submission: {first}: {errors[first][0]}", errors=errors)
    return parsed


def submission_digest(parsed: Iterable[tuple[int, str, int | None]]) -> str:
    """The digest of a submission's choices (not its timings): a resent submission is the same one."""
    canonical = json.dumps(sorted((qid, choice) for qid, choice, _ in parsed), separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def submit_result(*, id: int, status: str, submitted_at: datetime | None, reward: Any, answers: int) -> SubmitResult:
    return {"id": id, "status": status, "answers": answers, "submitted_at": submitted_at,
            "reward": f"{Decimal(reward):.2f}"}


def submit_check(*, assignment_id: int, status: str, digest: str, submitted_at: datetime | None, reward: Any,
                 items: Sequence[Item], answers: Any, blind: Mapping[str, Any] | None = None
                 ) -> tuple[list[ParsedAnswer], str, SubmitResult | None]:
    """Validate a submission against its HIT: (parsed answers, digest, the earlier result when this is
    a resend of the submitted HIT). 409 for different answers to a submitted HIT or a returned one.

    `blind`, the campaign's annotation settings, given for a crowd-link account (an unverified claim of
    an external id): a resend to a submitted HIT answers 200 whatever the answers sent, with nothing
    stored for the worker (no time; the reward the campaign's settings give for that many answers, not
    the stored one): 200 vs 409 would tell whether a guess equals the stored answers, an oracle on
    someone else's earlier answers. Nothing is written."""
    parsed = answers_parse(answers, items)
    new_digest = submission_digest(parsed)
    if status == SUBMITTED and blind:
        return parsed, new_digest, submit_result(id=assignment_id, status=status, submitted_at=None,
                                                 reward=reward_of(blind, len(parsed)), answers=len(parsed))
    if status == SUBMITTED:
        if digest == new_digest:
            return parsed, new_digest, submit_result(id=assignment_id, status=status, submitted_at=submitted_at,
                                                     reward=reward, answers=len(parsed))
        raise ConflictError("This HIT was already submitted with different answers.",
                            errors={"answers": ["differ from the submitted ones"]})
    if status == RETURNED:
        raise ConflictError("This HIT was returned; ask for a new one.", errors={"status": ["returned"]})
    return parsed, new_digest, None


def refuse_deleted(*, deleted: bool, campaign_id: int) -> None:
    """No answer goes into a soft-deleted campaign (404, as everywhere it no longer exists)."""
    if deleted:
        raise NotFoundError(f"Campaign {campaign_id} not found.")


def released(items: Iterable[Item]) -> list[int]:
    """The non-gold questions whose lease was released (expired HIT): a late submit re-takes them."""
    return sorted(it.question_id for it in items if it.status == RELEASED and not it.is_gold)


def real_ids(items: Iterable[Item]) -> list[int]:
    """The non-gold questions of a HIT: their counters and labels move on submit."""
    return sorted(it.question_id for it in items if not it.is_gold)


def retaken_check(taken: int, released_ids: Sequence[int]) -> None:
    """A late submission stands only if every released question still had room (409 otherwise)."""
    if taken != len(released_ids):
        raise ConflictError("Your time on this HIT ran out and its questions were given to other annotators; "
                            "nothing was saved. Ask for a new HIT.", errors={"expires_at": ["lease expired"]})


def already_answered() -> ConflictError:
    return ConflictError("Some of these questions already have your answer.")


def reward(cfg: Mapping[str, Any], answers: int) -> Decimal:
    """A HIT's reward: `reward` per HIT, or per answered question (`reward_per: question`)."""
    amount = Decimal(cfg["reward"])
    return amount * answers if cfg["reward_per"] == "question" else amount


reward_of = reward  # (for submit_check, whose `reward` argument is the stored one)
