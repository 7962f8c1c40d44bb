"""The HIT engine: payload, R distinct annotators, leases, heartbeat, order, PST whole images,
pause, exclusion, redundancy, and query counts."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.hits import answers_submit, assignment_next
from annotation.models import Assignment, AssignmentItem, Question
from generation.models import Image
from tests.builders.campaigns import hit_submit_all as _answer_all
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("hit_engine")]


def test_hit_payload_has_only_public_fields(gep_campaign, worker):
    _, client = worker
    response = client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/")
    assert response.status_code == 201, response.content
    hit = response.json()
    assert set(hit) == {"id", "expires_at", "questions"}
    assert len(hit["questions"]) == 2
    for q in hit["questions"]:
        assert set(q) == {"id", "image_url", "text", "choices"}
        assert q["choices"] == ["Yes", "No"] and q["image_url"].endswith(".webp")
    text = response.content.decode()
    for secret in ("A woman", "A man", "prompt", "gender", "explicit", "placeholder"):
        assert secret not in text


def test_active_hit_is_returned_again_then_204_when_nothing_left(gep_campaign, worker):
    _, client = worker
    url = f"/api/campaigns/{gep_campaign.pk}/assignments/"
    first = client.post(url)
    again = client.post(url)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    seen = set()
    hit = first.json()
    while True:
        seen.update(q["id"] for q in hit["questions"])
        assert _answer_all(client, hit).status_code == 200
        response = client.post(url)
        if response.status_code == 204:
            break
        hit = response.json()
        assert not seen & {q["id"] for q in hit["questions"]}  # never the same question twice
    assert len(seen) == 6


def test_each_question_gets_exactly_r_distinct_annotators(researcher):
    campaign = open_campaign(_campaign_with(researcher, 4, hit_size=3))
    annotators = [make_annotator(f"ann{i}", campaign=campaign)[0] for i in range(5)]
    for annotator in annotators:
        while True:
            hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
            if hit is None:
                break
            answers_submit(annotator=annotator, assignment_id=hit["id"],
                           answers=[{"question": q["id"], "choice": "Yes"} for q in hit["questions"]])
    for q in Question.objects.filter(campaign=campaign):
        annotator_ids = list(AssignmentItem.objects.filter(question=q).values_list("annotator_id", flat=True))
        assert len(annotator_ids) == 3 == len(set(annotator_ids))
        assert q.assigned == q.completed == 3
    # The last two annotators found nothing left.
    assert AssignmentItem.objects.filter(annotator=annotators[4]).count() == 0


def _campaign_with(researcher, n, **annotation):
    campaign = make_campaign(researcher, settings=["explicit"], annotation=annotation)
    make_images(campaign, "explicit", n)
    return campaign


def test_nearest_to_completion_first(researcher):
    campaign = open_campaign(_campaign_with(researcher, 5, hit_size=1))
    target = Question.objects.filter(campaign=campaign).order_by("-order_key").first()
    Question.objects.filter(pk=target.pk).update(assigned=2, completed=2)
    annotator, _ = make_annotator("nia", campaign=campaign)
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    assert hit["questions"][0]["id"] == target.pk


def test_expired_lease_goes_back_to_the_pool(researcher):
    campaign = open_campaign(_campaign_with(researcher, 1, redundancy=1, hit_size=1))
    a, _ = make_annotator("amy", campaign=campaign)
    b, _ = make_annotator("bob", campaign=campaign)
    hit, _ = assignment_next(annotator=a, campaign_id=campaign.pk)
    assert hit is not None
    assert assignment_next(annotator=b, campaign_id=campaign.pk)[0] is None  # R=1 and leased
    Assignment.objects.filter(pk=hit["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    hit_b, created = assignment_next(annotator=b, campaign_id=campaign.pk)
    assert created and hit_b["questions"][0]["id"] == hit["questions"][0]["id"]
    assert Assignment.objects.get(pk=hit["id"]).status == Assignment.Status.EXPIRED
    assert AssignmentItem.objects.get(assignment_id=hit["id"]).status == AssignmentItem.Status.RELEASED
    assert Question.objects.get(campaign=campaign).assigned == 1
    # The first annotator never gets that question again.
    assert assignment_next(annotator=a, campaign_id=campaign.pk)[0] is None


def test_periodic_reclaim_task(researcher):
    from annotation.tasks import leases_reclaim_task

    campaign = open_campaign(_campaign_with(researcher, 2, hit_size=2))
    a, _ = make_annotator("amy", campaign=campaign)
    hit, _ = assignment_next(annotator=a, campaign_id=campaign.pk)
    assert leases_reclaim_task() == 0
    Assignment.objects.filter(pk=hit["id"]).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert leases_reclaim_task() == 2
    assert set(Question.objects.filter(campaign=campaign).values_list("assigned", flat=True)) == {0}


def test_heartbeat_extends_the_lease(gep_campaign, worker):
    _, client = worker
    hit = client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/").json()
    Assignment.objects.filter(pk=hit["id"]).update(expires_at=timezone.now() + timedelta(minutes=1))
    response = client.post(f"/api/assignments/{hit['id']}/heartbeat/")
    assert response.status_code == 200
    expires = Assignment.objects.get(pk=hit["id"]).expires_at
    assert expires > timezone.now() + timedelta(minutes=29)
    other = make_annotator("olga", campaign=gep_campaign)[1]
    assert other.post(f"/api/assignments/{hit['id']}/heartbeat/").status_code == 404
    _answer_all(client, hit)
    assert client.post(f"/api/assignments/{hit['id']}/heartbeat/").status_code == 409


def test_return_gives_questions_back(gep_campaign, worker):
    annotator, client = worker
    hit = client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/").json()
    assert client.post(f"/api/assignments/{hit['id']}/return/").json()["status"] == "returned"
    ids = [q["id"] for q in hit["questions"]]
    assert set(Question.objects.filter(pk__in=ids).values_list("assigned", flat=True)) == {0}


def test_pst_hits_hold_whole_images(researcher):
    campaign = make_campaign(researcher, kind="pst", annotation={"hit_size": 2})
    make_images(campaign, "paired", 3)
    make_images(campaign, "single", 2)
    open_campaign(campaign)
    annotator, _ = make_annotator("pia", campaign=campaign)
    seen_images = []
    while True:
        hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
        if hit is None:
            break
        questions = Question.objects.in_bulk([q["id"] for q in hit["questions"]])
        images = [questions[q["id"]].image_id for q in hit["questions"]]
        assert len(set(images)) <= 2
        for image_id in set(images):
            # every person of the image is in this HIT, next to each other
            assert images.count(image_id) == Question.objects.filter(image_id=image_id).count()
        seen_images.extend(set(images))
        answers_submit(annotator=annotator, assignment_id=hit["id"],
                       answers=[{"question": q["id"], "choice": "Feminine"} for q in hit["questions"]])
    assert len(seen_images) == 5 == len(set(seen_images))


def test_paused_campaign_hands_out_nothing_and_consent_is_required(gep_campaign, worker, api):
    _, client = worker
    api.post(f"/api/campaigns/{gep_campaign.pk}/pause/")
    response = client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/")
    assert response.status_code == 409 and "paused" in response.json()["detail"]
    api.post(f"/api/campaigns/{gep_campaign.pk}/resume/")
    stranger = make_annotator("sven")[1]
    response = stranger.post(f"/api/campaigns/{gep_campaign.pk}/assignments/")
    assert response.status_code == 403 and "consent" in response.json()["errors"]
    assert client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/").status_code == 201


def test_researcher_without_annotator_profile_gets_403(gep_campaign, api):
    assert api.post(f"/api/campaigns/{gep_campaign.pk}/assignments/").status_code == 403


def test_excluded_image_leaves_the_pool(researcher):
    campaign = open_campaign(_campaign_with(researcher, 2, hit_size=5))
    image = Image.objects.filter(campaign=campaign).first()
    image.excluded = True
    image.save()
    annotator, _ = make_annotator("eve", campaign=campaign)
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    assert len(hit["questions"]) == 1
    assert Question.objects.get(pk=hit["questions"][0]["id"]).image_id != image.pk


def test_raise_redundancy_for_a_subset(api, researcher):
    campaign = open_campaign(_campaign_with(researcher, 3, redundancy=1, hit_size=1))
    q1, q2, q3 = Question.objects.filter(campaign=campaign).order_by("pk")
    response = api.post(f"/api/campaigns/{campaign.pk}/questions/redundancy/",
                        {"questions": [q1.pk], "required": 2}, format="json")
    assert response.status_code == 200 and response.json()["updated"] == 1
    response = api.post(f"/api/campaigns/{campaign.pk}/questions/redundancy/",
                        {"filter": {"image": q2.image_id}, "required": 4}, format="json")
    assert response.json()["updated"] == 1
    assert [q.required for q in Question.objects.filter(campaign=campaign).order_by("pk")] == [2, 4, 1]
    bad = api.post(f"/api/campaigns/{campaign.pk}/questions/redundancy/",
                   {"filter": {"colour": "red"}, "required": 4}, format="json")
    assert bad.status_code == 400 and "filter.colour" in bad.json()["errors"]
    assert api.post(f"/api/campaigns/{campaign.pk}/questions/redundancy/",
                    {"questions": [q3.pk], "required": 0}, format="json").status_code == 400


def test_query_counts_of_next_and_submit_do_not_grow_with_hit_size(researcher, hit_engine):
    # SAVEPOINT/RELEASE included (the test runs inside a transaction). SQL engine: 3 statements each
    # (annotation.hits' docstrings; exact counts in test_query_counts.py); ORM: 8 each.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    bound = 5 if hit_engine == "sql" else 10
    for size in (2, 20):
        campaign = open_campaign(_campaign_with(researcher, 20, hit_size=size))
        annotator, _ = make_annotator(f"q{size}", campaign=campaign)
        with CaptureQueriesContext(connection) as ctx:
            hit, created = assignment_next(annotator=annotator, campaign_id=campaign.pk)
        assert created and len(hit["questions"]) == size
        assert len(ctx.captured_queries) == bound, [q["sql"][:80] for q in ctx.captured_queries]
        answers = [{"question": q["id"], "choice": "No", "time_ms": 900} for q in hit["questions"]]
        with CaptureQueriesContext(connection) as ctx:
            answers_submit(annotator=annotator, assignment_id=hit["id"], answers=answers)
        assert len(ctx.captured_queries) == bound, [q["sql"][:80] for q in ctx.captured_queries]


def test_query_counts_over_http(gep_campaign, worker, hit_engine, django_assert_num_queries):
    # + the token lookup (one statement, with the user and the annotator) and SAVEPOINT/RELEASE
    _, client = worker
    with django_assert_num_queries(6 if hit_engine == "sql" else 11):
        hit = client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/").json()
    with django_assert_num_queries(6 if hit_engine == "sql" else 11):
        assert _answer_all(client, hit).status_code == 200
