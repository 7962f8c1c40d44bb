"""Concurrency on PostgreSQL: many annotators asking for HITs at once never over-assign a question
nor give one annotator the same question twice, and every slot ends up filled."""
from __future__ import annotations

import random
import threading
from collections import Counter

import pytest
from django.db import connection, connections

from annotation.models import Answer, AssignmentItem, Question
from annotation.services import annotator_create, answers_submit, assignment_next, enrollment_consent

from .conftest import make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("hit_size", [1, 3])
def test_fifty_annotators_at_once_fill_every_slot_exactly(researcher, hit_size):
    if connection.vendor != "postgresql":
        pytest.skip("row locking (SKIP LOCKED) is exercised on PostgreSQL; CI runs it there")
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
