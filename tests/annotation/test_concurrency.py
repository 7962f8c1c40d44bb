"""Concurrency on PostgreSQL: many annotators asking for HITs at once never over-assign a question
nor give one annotator the same question twice, and every slot ends up filled; through both HIT
engines (the prepared SQL and the portable ORM one, which the SQLite demo runs)."""
from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from django.db import connection, connections
from django.db.models import F

from annotation.hits import answers_submit, assignment_next
from annotation.models import AggregatedLabel, Answer, Assignment, AssignmentItem, Question
from annotation.services.annotators import annotator_create, enrollment_consent
from common import fastpath
from tests.builders.campaigns import make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["sql", "orm"])
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """The HIT engine every thread uses (`fastpath.forced` is process-wide)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locking (SKIP LOCKED) is exercised on PostgreSQL; CI runs it there")
    with fastpath.forced("hit_engine", request.param == "sql"):
        yield request.param


def _enrolled(campaign, prefix: str, n: int = 50) -> list:
    """n annotators signed up and enrolled in `campaign`."""
    out = []
    for i in range(n):
        annotator, _ = annotator_create(username=f"{prefix}{i}", password="Concurrent-pass-77", consent=True)
        enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
        out.append(annotator)
    return out


def _run_all(annotators: list, work, errors: list[BaseException], *, timeout: float) -> None:
    """One thread per annotator running `work`; every thread finished and none raised."""
    threads = [threading.Thread(target=work, args=(a,)) for a in annotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not errors, errors[:3]
    assert not any(t.is_alive() for t in threads)


@pytest.mark.parametrize("hit_size", [1, 3])
def test_fifty_annotators_at_once_fill_every_slot_exactly(researcher, hit_size, engine):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 3, "hit_size": hit_size})
    make_images(campaign, "explicit", 30)
    open_campaign(campaign)
    annotators = _enrolled(campaign, f"c{hit_size}-")
    barrier = threading.Barrier(50)
    errors: list[BaseException] = []
    hits_per_annotator: Counter[int] = Counter()

    def work(annotator):
        try:
            rng = random.Random(annotator.pk)
            barrier.wait()
            while True:
                hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
                if hit is None:
                    break
                assert 1 <= len(hit["questions"]) <= hit_size
                hits_per_annotator[annotator.pk] += 1
                answers_submit(annotator=annotator, assignment_id=hit["id"], answers=[
                    {"question": q["id"], "choice": rng.choice(q["choices"]), "time_ms": 500} for q in hit["questions"]])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    _run_all(annotators, work, errors, timeout=120)
    questions = list(Question.objects.filter(campaign=campaign))
    assert len(questions) == 30
    for q in questions:
        assert q.assigned == q.completed == 3, (q.pk, q.assigned, q.completed)
        annotators_of_q = list(AssignmentItem.objects.filter(question=q).values_list("annotator_id", flat=True))
        assert len(annotators_of_q) == 3 == len(set(annotators_of_q))
    assert Answer.objects.filter(campaign=campaign).count() == 90
    assert sum(hits_per_annotator.values()) >= 90 // hit_size
    # Labels were written by concurrent submits of the same questions: each must count all 3 answers
    # (the later submit waits on the question row lock, then reads the earlier one's answers).
    votes: dict[int, Counter[str]] = {}
    for qid, choice in Answer.objects.filter(campaign=campaign).values_list("question_id", "choice"):
        votes.setdefault(qid, Counter())[choice] += 1
    labels = {lab.question_id: lab for lab in AggregatedLabel.objects.filter(question__campaign=campaign)}
    assert len(labels) == 30
    for qid, counts in votes.items():
        assert labels[qid].votes == dict(counts) and labels[qid].answers == 3, (qid, labels[qid].votes, counts)


def test_one_annotator_asking_from_many_tabs_at_once_gets_one_hit(researcher, engine):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 3, "hit_size": 2})
    make_images(campaign, "explicit", 30)
    open_campaign(campaign)
    annotator, _ = annotator_create(username="tabs", password="Concurrent-pass-77", consent=True)
    enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
    barrier = threading.Barrier(8)
    results: list[tuple[int, bool]] = []
    errors: list[BaseException] = []

    def ask():
        try:
            barrier.wait()
            hit, created = assignment_next(annotator=annotator, campaign_id=campaign.pk)
            results.append((hit["id"], created))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors[:3]
    assert len({hit_id for hit_id, _ in results}) == 1, results
    assert sum(created for _, created in results) == 1
    assert Assignment.objects.filter(annotator=annotator).count() == 1
    assert AssignmentItem.objects.filter(annotator=annotator).count() == 2


def test_fifty_annotators_on_an_adaptive_campaign_never_over_assign(researcher, engine):
    """Adaptive redundancy under concurrency: `required` grows at submit while other annotators take
    and submit the same questions; no question ever has more answers than its `required`, nor more
    than `max`, and every question ends settled or at `max`."""
    from annotation.redundancy import settled

    cfg = {"min": 2, "max": 5, "rule": "confidence", "threshold": 0.75, "prior": 1.0}
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": cfg, "hit_size": 2})
    make_images(campaign, "explicit", 30)
    open_campaign(campaign)
    annotators = _enrolled(campaign, "ad-")
    barrier = threading.Barrier(50)
    errors: list[BaseException] = []

    def work(annotator):
        try:
            rng = random.Random(annotator.pk)
            barrier.wait()
            last_try = False
            while True:
                hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
                if hit is None:
                    # Nothing for me now; a question can reopen while answers are in flight (its
                    # `required` grows at their submit). Leave once nothing is in flight and a last
                    # request after that still finds nothing (growth happens only at submit).
                    if Question.objects.filter(campaign=campaign, assigned__gt=F("completed")).exists():
                        last_try = False
                        time.sleep(0.05)
                        continue
                    if last_try:
                        break
                    last_try = True
                    continue
                last_try = False
                assert 1 <= len(hit["questions"]) <= 2
                # A crowd that agrees on most questions: Yes 80% of the time.
                answers_submit(annotator=annotator, assignment_id=hit["id"], answers=[
                    {"question": q["id"], "choice": "Yes" if rng.random() < 0.8 else "No", "time_ms": 500}
                    for q in hit["questions"]])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    _run_all(annotators, work, errors, timeout=180)
    answers = Counter(Answer.objects.filter(campaign=campaign).values_list("question_id", flat=True))
    labels = {lab.question_id: lab for lab in AggregatedLabel.objects.filter(question__campaign=campaign)}
    requireds: Counter[int] = Counter()
    for q in Question.objects.filter(campaign=campaign):
        assert answers[q.pk] <= q.required <= 5, (q.pk, answers[q.pk], q.required)
        assert q.assigned == q.completed == answers[q.pk] == q.required, (q.pk, q.assigned, q.completed, q.required)
        annotators_of_q = list(AssignmentItem.objects.filter(question=q).values_list("annotator_id", flat=True))
        assert len(annotators_of_q) == len(set(annotators_of_q)) == q.required
        assert labels[q.pk].answers == q.required and sum(labels[q.pk].votes.values()) == q.required
        assert settled(labels[q.pk].votes, 2, cfg)
        requireds[q.required] += 1
    assert requireds[2] > 0 and sum(n for r, n in requireds.items() if r > 2) > 0, requireds  # both paths taken
