"""Qualification tests: gating of families, grading, retake delay, attempts, no answer key leaks."""
from __future__ import annotations

from datetime import timedelta

import pytest

from annotation.hits import assignment_next
from annotation.models import QualificationAttempt, Question
from generation.models import Image
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(researcher):
    """GEP explicit: one question per image; two attribute families present (boots, slippers...)."""
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 50})
    make_images(campaign, "explicit", 40)
    return open_campaign(campaign)


def _family_with_questions(campaign):
    return Question.objects.filter(campaign=campaign).values_list("family", flat=True).order_by("pk").first()


def _create_test(api, campaign, family, *, correct="Yes", **extra):
    images = list(Image.objects.filter(campaign=campaign).values_list("pk", flat=True)[:6])
    body = {"name": f"{family} test", "family": family, "items": [{"image": i, "correct": correct} for i in images],
            "retake_after_minutes": 30, "max_attempts": 2, **extra}
    response = api.post(f"/api/campaigns/{campaign.pk}/qualifications/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_unpassed_family_is_withheld_until_passed(api, campaign):
    family = _family_with_questions(campaign)
    qual = _create_test(api, campaign, family)
    assert qual["items"][0]["correct"] == "Yes"  # the researcher sees the key
    annotator, client = make_annotator("quinn", campaign=campaign)
    hit = client.post(f"/api/campaigns/{campaign.pk}/assignments/").json()
    families = set(Question.objects.filter(pk__in=[q["id"] for q in hit["questions"]]).values_list("family", flat=True))
    assert family not in families and families
    client.post(f"/api/assignments/{hit['id']}/return/")
    # Annotators see items without answers.
    listing = client.get(f"/api/campaigns/{campaign.pk}/qualifications/")
    assert listing.status_code == 200
    assert "correct" not in listing.content.decode() and "Yes\"" not in str(listing.json()["results"][0]["items"][0])
    result = client.post(f"/api/qualifications/{qual['id']}/attempts/", {"answers": ["Yes"] * 6}, format="json")
    assert result.status_code == 201 and result.json() == {
        "passed": True, "correct": 6, "total": 6, "retake_at": None, "attempts_left": 0}
    # Returned questions are seen already: a new HIT brings the family's questions now.
    annotator2, client2 = make_annotator("quinn2", campaign=campaign)
    client2.post(f"/api/qualifications/{qual['id']}/attempts/", {"answers": ["Yes"] * 6}, format="json")
    hit2, _ = assignment_next(annotator=annotator2, campaign_id=campaign.pk)
    families2 = set(Question.objects.filter(pk__in=[q["id"] for q in hit2["questions"]]).values_list("family", flat=True))
    assert family in families2


def test_failed_attempt_retake_delay_and_max_attempts(api, campaign):
    family = _family_with_questions(campaign)
    qual = _create_test(api, campaign, family)
    items = api.get(f"/api/campaigns/{campaign.pk}/qualifications/").json()["results"][0]["items"]
    annotator, client = make_annotator("rita", campaign=campaign)
    url = f"/api/qualifications/{qual['id']}/attempts/"
    answers = [{"item": it["id"], "choice": "No" if i == 0 else "Yes"} for i, it in enumerate(items)]
    first = client.post(url, {"answers": answers}, format="json").json()
    assert first["passed"] is False and first["correct"] == 5 and first["total"] == 6 and first["retake_at"]
    too_soon = client.post(url, {"answers": ["Yes"] * 6}, format="json")
    assert too_soon.status_code == 409 and "retake_at" in too_soon.json()["errors"]
    QualificationAttempt.objects.filter(annotator=annotator).update(
        created_at=QualificationAttempt.objects.get(annotator=annotator).created_at - timedelta(minutes=31))
    second = client.post(url, {"answers": ["No"] * 6}, format="json").json()
    assert second["passed"] is False and second["retake_at"] is None and second["attempts_left"] == 0
    QualificationAttempt.objects.filter(annotator=annotator).update(
        created_at=QualificationAttempt.objects.order_by("pk").first().created_at - timedelta(days=1))
    no_more = client.post(url, {"answers": ["Yes"] * 6}, format="json")
    assert no_more.status_code == 409 and "attempts" in no_more.json()["errors"]
    # Still gated.
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    assert family not in set(Question.objects.filter(pk__in=[q["id"] for q in hit["questions"]])
                             .values_list("family", flat=True))


def test_bad_attempts_and_definitions(api, campaign):
    family = _family_with_questions(campaign)
    qual = _create_test(api, campaign, family, pass_fraction=0.5)
    annotator, client = make_annotator("sam", campaign=campaign)
    url = f"/api/qualifications/{qual['id']}/attempts/"
    assert client.post(url, {"answers": ["Yes"]}, format="json").status_code == 400
    assert "answers.0" in client.post(url, {"answers": ["Maybe"] * 6}, format="json").json()["errors"]
    assert client.post(url, {"answers": ["Yes", "Yes", "Yes", "No", "No", "No"]}, format="json").json()["passed"]
    assert client.post(url, {"answers": ["Yes"] * 6}, format="json").status_code == 409  # already passed
    dup = api.post(f"/api/campaigns/{campaign.pk}/qualifications/", {"family": family, "items": []}, format="json")
    assert dup.status_code == 409
    bad = api.post(f"/api/campaigns/{campaign.pk}/qualifications/",
                   {"family": "attribute:nonsense", "items": [{"image": 0, "correct": "Perhaps"}]}, format="json")
    assert bad.status_code == 400 and {"family", "items.0.image"} <= set(bad.json()["errors"])
    assert client.post(f"/api/campaigns/{campaign.pk}/qualifications/", {"family": family}, format="json").status_code == 403
    # The researcher sees pass rates.
    stats = api.get(f"/api/campaigns/{campaign.pk}/qualifications/").json()["results"][0]["stats"]
    assert stats["attempts"] == 1 and stats["passed"] == 1 and stats["pass_rate"] == 1.0


def test_no_answer_key_in_any_annotator_response(api, campaign):
    family = _family_with_questions(campaign)
    qual = _create_test(api, campaign, family, correct="No")
    gold_q = Question.objects.filter(campaign=campaign).exclude(family=family).first()
    api.post(f"/api/campaigns/{campaign.pk}/questions/gold/",
             {"items": [{"question": gold_q.pk, "answer": "No"}]}, format="json")
    annotator, client = make_annotator("tess", campaign=campaign)
    bodies = [
        client.get(f"/api/campaigns/{campaign.pk}/task/"),
        client.get(f"/api/campaigns/{campaign.pk}/qualifications/"),
        client.post(f"/api/campaigns/{campaign.pk}/assignments/"),
        client.post(f"/api/qualifications/{qual['id']}/attempts/", {"answers": ["Yes"] * 6}, format="json"),
    ]
    for index, response in enumerate(bodies):
        assert response.status_code in (200, 201), response.content
        text = response.content.decode()
        # The attempt's result says how many were correct (contract), never which answer is right.
        leaks = ("gold", "metadata", "prompt", "gender", "votes") + (() if index == 3 else ("correct\"",))
        for leak in leaks:
            assert leak not in text, (leak, text[:300])
    assert set(bodies[3].json()) == {"passed", "correct", "total", "retake_at", "attempts_left"}
    task = bodies[0].json()
    assert task["consented"] is True and task["qualifications"][0]["family"] == family
    assert task["instructions"] and task["consent_text"]
