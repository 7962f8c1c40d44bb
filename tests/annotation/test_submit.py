"""Submission: validation (400 naming the problem, nothing saved), idempotency, late submissions,
ownership, time recorded, counters, and majority labels with ties."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from annotation.hits import answers_submit, assignment_next
from annotation.labels import TIE, majority_label
from annotation.models import AggregatedLabel, Answer, Assignment, AssignmentItem, Question
from annotation.services.leases import leases_reclaim
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hit_engine")]


def _hit(client, campaign):
    response = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
    assert response.status_code in (200, 201), response.content
    return response.json()


def _submit(client, hit_id, answers):
    return client.post(f"/api/assignments/{hit_id}/submit/", {"answers": answers}, format="json")


def test_submit_stores_answers_time_and_counters(gep_campaign, worker):
    annotator, client = worker
    hit = _hit(client, gep_campaign)
    answers = [{"question": q["id"], "choice": "Yes", "time_ms": 1000 + i} for i, q in enumerate(hit["questions"])]
    response = _submit(client, hit["id"], answers)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "submitted" and response.json()["duplicate"] is False
    stored = {a.question_id: a for a in Answer.objects.filter(annotator=annotator)}
    assert {q: a.time_ms for q, a in stored.items()} == {a["question"]: a["time_ms"] for a in answers}
    assert all(a.choice == "Yes" and a.assignment_id == hit["id"] for a in stored.values())
    for q in Question.objects.filter(pk__in=stored):
        assert q.completed == 1 and q.assigned == 1
    assert set(AssignmentItem.objects.filter(assignment_id=hit["id"]).values_list("status", flat=True)) == {"answered"}
    label = AggregatedLabel.objects.get(question_id=answers[0]["question"])
    assert label.label == "Yes" and label.votes == {"Yes": 1} and label.tie is False


def test_same_submission_twice_is_one_and_a_different_one_is_409(gep_campaign, worker):
    annotator, client = worker
    hit = _hit(client, gep_campaign)
    answers = [{"question": q["id"], "choice": "No", "time_ms": 800} for q in hit["questions"]]
    assert _submit(client, hit["id"], answers).status_code == 200
    again = _submit(client, hit["id"], answers)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert Answer.objects.filter(annotator=annotator).count() == 2
    assert Question.objects.get(pk=answers[0]["question"]).completed == 1
    changed = [dict(answers[0], choice="Yes"), answers[1]]
    assert _submit(client, hit["id"], changed).status_code == 409
    assert Answer.objects.filter(annotator=annotator, choice="Yes").count() == 0


@pytest.mark.parametrize("mutate, field", [
    (lambda a: a[:-1], "answers"),                                           # missing answer
    (lambda a: [dict(a[0], choice="Maybe"), a[1]], "answers.0.choice"),       # unknown choice
    (lambda a: [a[0], dict(a[1], question=999999)], "answers.1.question"),    # not in this HIT
    (lambda a: [a[0], a[0], a[1]], "answers.1.question"),                     # duplicate
    (lambda a: [dict(a[0], question="x"), a[1]], "answers.0.question"),       # wrong type
    (lambda a: [dict(a[0], time_ms=-5), a[1]], "answers.0.time_ms"),          # wrong type / range
    (lambda a: "yes", "answers"),                                             # not a list
])
def test_bad_submissions_name_the_problem_and_save_nothing(gep_campaign, worker, mutate, field):
    annotator, client = worker
    hit = _hit(client, gep_campaign)
    answers = [{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in hit["questions"]]
    response = _submit(client, hit["id"], mutate(answers))
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert not Answer.objects.filter(annotator=annotator).exists()
    assert Assignment.objects.get(pk=hit["id"]).status == "active"
    assert _submit(client, hit["id"], answers).status_code == 200


def test_someone_elses_assignment_is_404(gep_campaign, worker):
    _, client = worker
    hit = _hit(client, gep_campaign)
    _, other = make_annotator("otto", campaign=gep_campaign)
    answers = [{"question": q["id"], "choice": "Yes"} for q in hit["questions"]]
    assert _submit(other, hit["id"], answers).status_code == 404
    assert _submit(other, 123456, answers).status_code == 404


def test_late_submit_accepted_when_the_slot_is_still_free(researcher):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 1, "hit_size": 1})
    make_images(campaign, "explicit", 1)
    open_campaign(campaign)
    a, client_a = make_annotator("amy", campaign=campaign)
    hit = _hit(client_a, campaign)
    Assignment.objects.filter(pk=hit["id"]).update(expires_at=timezone.now() - timedelta(minutes=5))
    # Not reclaimed yet: the lease still counts, the submission is accepted.
    response = _submit(client_a, hit["id"], [{"question": hit["questions"][0]["id"], "choice": "No"}])
    assert response.status_code == 200
    q = Question.objects.get(campaign=campaign)
    assert (q.assigned, q.completed) == (1, 1)


def test_late_submit_after_reclaim_retakes_the_free_slot_or_409_when_taken(researcher):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 1, "hit_size": 1})
    make_images(campaign, "explicit", 2)
    open_campaign(campaign)
    a, client_a = make_annotator("amy", campaign=campaign)
    b, client_b = make_annotator("bob", campaign=campaign)
    first = _hit(client_a, campaign)
    Assignment.objects.filter(pk=first["id"]).update(expires_at=timezone.now() - timedelta(minutes=5))
    # bob's request reclaims amy's lease; bob gets that question (nearest... any free one).
    second = _hit(client_b, campaign)
    assert Assignment.objects.get(pk=first["id"]).status == "expired"
    answer = [{"question": first["questions"][0]["id"], "choice": "Yes"}]
    if second["questions"][0]["id"] == first["questions"][0]["id"]:
        response = _submit(client_a, first["id"], answer)
        assert response.status_code == 409 and "ran out" in response.json()["detail"]
        assert not Answer.objects.filter(annotator=a).exists()
    else:
        assert _submit(client_a, first["id"], answer).status_code == 200
    # Make the other case happen deterministically too: a fresh expired HIT whose slot stays free.
    Assignment.objects.filter(pk=second["id"]).update(expires_at=timezone.now() - timedelta(minutes=5))
    with transaction.atomic():
        leases_reclaim(campaign_id=campaign.pk)
    q = Question.objects.get(pk=second["questions"][0]["id"])
    assert q.assigned == 0
    assert _submit(client_b, second["id"], [{"question": q.pk, "choice": "No"}]).status_code == 200
    q.refresh_from_db()
    assert (q.assigned, q.completed) == (1, 1)


def test_late_submit_409_when_the_slot_was_handed_to_someone_else(researcher):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 1, "hit_size": 1})
    make_images(campaign, "explicit", 1)
    open_campaign(campaign)
    a, client_a = make_annotator("amy", campaign=campaign)
    b, client_b = make_annotator("bob", campaign=campaign)
    first = _hit(client_a, campaign)
    Assignment.objects.filter(pk=first["id"]).update(expires_at=timezone.now() - timedelta(minutes=5))
    second = _hit(client_b, campaign)
    assert second["questions"][0]["id"] == first["questions"][0]["id"]
    response = _submit(client_a, first["id"], [{"question": first["questions"][0]["id"], "choice": "Yes"}])
    assert response.status_code == 409
    assert _submit(client_b, second["id"], [{"question": second["questions"][0]["id"], "choice": "No"}]).status_code == 200
    q = Question.objects.get(campaign=campaign)
    assert (q.assigned, q.completed) == (1, 1)
    assert AggregatedLabel.objects.get(question=q).label == "No"


def test_majority_label_and_ties(researcher):
    assert majority_label({"Feminine": 2, "Masculine": 1}) == ("Feminine", False)
    assert majority_label({"Feminine": 1, "Masculine": 1, "Cannot identify": 1}) == (TIE, True)
    campaign = make_campaign(researcher, kind="pst", annotation={"redundancy": 2, "hit_size": 1})
    make_images(campaign, "single", 1)
    open_campaign(campaign)
    choices = ["Feminine", "Masculine"]
    for i, choice in enumerate(choices):
        annotator, _ = make_annotator(f"t{i}", campaign=campaign)
        hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
        answers_submit(annotator=annotator, assignment_id=hit["id"],
                       answers=[{"question": hit["questions"][0]["id"], "choice": choice, "time_ms": 2000}])
    label = AggregatedLabel.objects.get(question__campaign=campaign)
    assert label.tie is True and label.label == "tie" and label.votes == {"Feminine": 1, "Masculine": 1}
    assert label.answers == 2
    # Ties are counted and reported in the progress, not hidden.
    from annotation.selectors import annotation_progress

    progress = annotation_progress(campaign)
    assert progress["labels_tied"] == 1 and progress["questions_complete"] == 1 and progress["answers"] == 2
