"""The HIT engine's pure rules (annotation/hits/rules.py), without a database: they agree with the
models and the pool's index, compose HITs (whole PST images, gold at random positions), parse
submissions and price them."""
from __future__ import annotations

import random
from decimal import Decimal

import pytest

from annotation.hits import rules
from annotation.hits.rules import Candidate, Item
from annotation.models import Assignment, AssignmentItem, Question
from campaigns.models import Campaign
from common.errors import ApplicationError, ConflictError


def _c(qid: int, image: int, slot: str = "x") -> Candidate:
    return Candidate(qid, f"q{qid}", ["Yes", "No"], image, f"w{image}.webp", "", "", slot)


def test_status_values_and_pool_order_match_the_models_and_the_index():
    assert (rules.ACTIVE, rules.SUBMITTED, rules.EXPIRED, rules.RETURNED) == tuple(Assignment.Status.values)
    assert (rules.LEASED, rules.ANSWERED, rules.RELEASED) == tuple(AssignmentItem.Status.values)
    assert rules.OPEN == Campaign.Status.OPEN
    index = next(i for i in Question._meta.indexes if i.name == "question_pool_open_idx")
    assert [f.removesuffix("_id") for f in rules.pool_order_fields()] == index.fields[2:]  # after campaign, is_gold
    assert rules.pool_order_sql("q") == "q.assigned DESC, q.completed DESC, q.order_key, q.image_id, q.slot"


def test_pst_hits_keep_whole_images_in_reading_order():
    rows = [_c(1, 10, "right"), _c(2, 11, "single"), _c(3, 10, "left"), _c(4, 12, "single"), _c(5, 13, "left")]
    assert [r.id for r in rules.whole_images(rows, k=2)] == [3, 1, 2]
    assert rules.pool_limit(pst=True, k=2) == 4 and rules.pool_limit(pst=False, k=2) == 2


def test_gold_count_and_positions():
    rng = random.Random(7)
    state = rng.getstate()
    assert rules.gold_count(k=5, gold_rate=0.0, rng=rng) == 0 and rng.getstate() == state  # no draw when off
    assert rules.gold_count(k=1, gold_rate=0.5, rng=rng) == 0 and rng.getstate() == state  # one seat: a real one
    assert rules.gold_count(k=4, gold_rate=0.25, rng=rng) == 1  # expectation exactly 1
    assert rules.gold_count(k=3, gold_rate=0.9, rng=rng) == 2  # at most k - 1
    draws = [rules.gold_count(k=2, gold_rate=0.25, rng=rng) for _ in range(4000)]  # expectation 0.5
    assert set(draws) == {0, 1} and 0.45 < sum(draws) / len(draws) < 0.55
    pool = [_c(i, i) for i in range(1, 7)]
    rows, real = rules.hit_compose(pool, pst=False, k=4, gold_rate=0.5,
                                   rng=random.Random(1), gold=lambda n: [_c(100 + i, 50 + i) for i in range(n)])
    # Gold takes seats inside the HIT: 2 of 4, the real ones the first 2 of the pool, in their order.
    assert len(rows) == 4 and real == [1, 2] and sorted(r.id for r in rows) == [1, 2, 100, 101]
    assert [r.id for r in rows if r.id < 100] == [1, 2]
    # Fewer gold left for this annotator: real questions fill the seats.
    rows, real = rules.hit_compose(pool, pst=False, k=4, gold_rate=0.5, rng=random.Random(1),
                                   gold=lambda n: [_c(100, 50)])
    assert len(rows) == 4 and real == [1, 2, 3]
    # Positions differ between HITs (seeded per HIT).
    positions = {tuple(r.id >= 100 for r in rules.hit_compose(pool, pst=False, k=4, gold_rate=0.5, rng=random.Random(s),
                                                             gold=lambda n: [_c(100 + i, 50 + i) for i in range(n)])[0])
                 for s in range(30)}
    assert len(positions) > 3
    # PST: gold goes between images, never between the two persons of a paired image.
    pst_rows = [_c(1, 10, "left"), _c(2, 10, "right"), _c(3, 11, "single"), _c(4, 12, "left"), _c(5, 12, "right")]
    for seed in range(30):
        rows, real = rules.hit_compose(pst_rows, pst=True, k=3, gold_rate=0.4, rng=random.Random(seed),
                                       gold=lambda n: [_c(100 + i, 50 + i) for i in range(n)])
        ids = [r.id for r in rows]
        assert abs(ids.index(1) - ids.index(2)) == 1
        assert len({r.image_id for r in rows}) <= 3


def test_gold_order_is_per_annotator():
    salts = [rules.gold_salt(campaign_seed=42, annotator_id=a) for a in (1, 2)]
    orders = [sorted(range(1, 21), key=lambda q, s=s: rules.gold_order_key(s, q)) for s in salts]
    assert orders[0] != orders[1] and sorted(orders[0]) == list(range(1, 21))
    assert rules.gold_order_key(salts[0], 5) == rules.gold_order_key(salts[0], 5)


def test_payload_shows_only_what_an_annotator_may_see():
    payload = rules.hit_payload(hit_id=9, expires_at=None, questions=[_c(1, 10, "left")],  # type: ignore[arg-type]
                                image_url=lambda **keys: "url:" + keys["web_file"])
    assert payload == {"id": 9, "expires_at": None,
                       "questions": [{"id": 1, "image_url": "url:w10.webp", "text": "q1", "choices": ["Yes", "No"],
                                      "family": ""}]}


def test_submissions_are_parsed_checked_and_priced():
    items = [Item(1, "leased", ["Yes", "No"], False), Item(2, "released", ["Yes", "No"], False),
             Item(3, "leased", ["Yes", "No"], True)]
    answers = [{"question": 2, "choice": "No", "time_ms": 5}, {"question": 1, "choice": "Yes"},
               {"question": 3, "choice": "Yes", "time_ms": 10}]
    parsed = rules.answers_parse(answers, items)
    assert parsed[0] == (2, "No", 5) and parsed[1].time_ms is None
    with pytest.raises(ApplicationError) as err:
        rules.answers_parse([{"question": 1, "choice": "Maybe"}, {"question": 1, "choice": "Yes"},
                             {"question": 7, "choice": "Yes"}, {"question": 3, "choice": "No", "time_ms": -1}], items)
    assert set(err.value.errors) == {"answers.0.choice", "answers.1.question", "answers.2.question",
                                     "answers.3.time_ms", "answers"}
    digest = rules.submission_digest(parsed)
    assert digest == rules.submission_digest([(1, "Yes", 99), (3, "Yes", None), (2, "No", 1)])  # order, timings
    assert rules.released(items) == [2] and rules.real_ids(items) == [1, 2]
    _, _, early = rules.submit_check(assignment_id=4, status="submitted", digest=digest, submitted_at=None,
                                     reward=Decimal("0.3"), items=items, answers=answers)
    assert early == {"id": 4, "status": "submitted", "answers": 3, "submitted_at": None, "reward": "0.30"}
    with pytest.raises(ConflictError):
        rules.submit_check(assignment_id=4, status="submitted", digest="other", submitted_at=None, reward=0,
                           items=items, answers=answers)
    with pytest.raises(ConflictError):
        rules.retaken_check(1, [2, 5])
    assert rules.reward({"reward": "0.05", "reward_per": "question"}, 3) == Decimal("0.15")
    assert rules.reward({"reward": "0.05", "reward_per": "hit"}, 3) == Decimal("0.05")
