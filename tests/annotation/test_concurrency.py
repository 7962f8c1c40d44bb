"""Concurrency on PostgreSQL: many annotators asking for HITs at once never over-assign a question
nor give one annotator the same question twice, and every slot ends up filled; through both HIT
engines (the prepared SQL and the portable ORM one, which the SQLite demo runs)."""
from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from django.db import connection, connections

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


@pytest.mark.parametrize("hit_size", [1, 3])
def test_fifty_annotators_at_once_fill_every_slot_exactly(researcher, hit_size, engine):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 3, "hit_size": hit_size})
    make_images(campaign, "explicit", 30)
    open_campaign(campaign)
    annotators = []
    for i in range(50):
        annotator, _ = annotator_create(username=f"c{hit_size}-{i}", password="Concurrent-pass-77", consent=True)
        enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
        annotators.append(annotator)
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

    threads = [threading.Thread(target=work, args=(a,)) for a in annotators]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert not any(t.is_alive() for t in threads)
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
