"""Exact statement counts of the HIT engine's hot paths, for both engines (the prepared SQL and the
ORM), so that a regression or a win shows: next (fresh, held, with gold, with expired leases, nothing
left), submit (fresh, resent, late, with a quality threshold), heartbeat, return, and a
token-authenticated request. Savepoints aside: the test's transaction turns each `atomic` block into
SAVEPOINT/RELEASE, which production runs as BEGIN/COMMIT (not logged by Django)."""
from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.hits import answers_submit, assignment_heartbeat, assignment_next, assignment_return
from annotation.models import Assignment, Question
from annotation.services.lifecycle import questions_gold_set
from common import fastpath
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = [pytest.mark.django_db]

# (prepared SQL, ORM) statements per path.
COUNTS = {
    "next": (3, 8),                 # state+locks, pool, one WITH | reclaim, enrollment, held, families, pool, 3 writes
    "next_held": (3, 4),            # ... the held HIT and its items instead of a new one
    "next_gold": (4, 9),            # + the gold draw
    "next_expired": (7, 12),        # + the release of the expired HIT (status, its items, items, counters)
    "next_nothing_left": (3, 5),    # SQL: an empty pool is re-checked for a HIT of a concurrent request
    "submit": (3, 8),               # lock+items, one WITH, labels | lock, items, answers, 4 writes, labels (2)
    "submit_resent": (1, 2),        # the same answers again: read and answered from the stored HIT
    "submit_late": (5, 9),          # + items read again (HIT expired) + the re-take of the released questions
    "submit_quality": (5, 9),       # + the annotator's stats (+ the campaign row for SQL)
    "submit_adaptive": (3, 9),      # adaptive redundancy, nothing grows: + the counters read back (ORM; SQL: in labels)
    "submit_adaptive_grow": (4, 10),  # ... and one UPDATE required = required + 1 for the unsettled
    "heartbeat": (2, 2),
    "return": (5, 5),
}


def _statements(ctx: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in ctx.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]


@contextmanager
def exactly(name: str, engine: str) -> Iterator[None]:
    expected = COUNTS[name][0 if engine == "sql" else 1]
    with CaptureQueriesContext(connection) as ctx:
        yield
    got = _statements(ctx)
    assert len(got) == expected, (name, engine, [" ".join(s.split())[:90] for s in got])


def _answers(hit: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"question": q["id"], "choice": q["choices"][0], "time_ms": 900} for q in hit["questions"]]


@pytest.fixture
def campaign(researcher):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2, "redundancy": 1})
    make_images(campaign, "explicit", 10)
    return open_campaign(campaign)


def test_next_heartbeat_submit_resend_return(campaign, hit_engine):
    annotator, _ = make_annotator("qa", campaign=campaign)
    with exactly("next", hit_engine):
        hit, created = assignment_next(annotator=annotator, campaign_id=campaign.pk, rng=random.Random(1))
    assert created and len(hit["questions"]) == 2
    with exactly("next_held", hit_engine):
        again, created = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    assert again["id"] == hit["id"] and not created
    with exactly("heartbeat", hit_engine):
        assignment_heartbeat(annotator=annotator, assignment_id=hit["id"])
    with exactly("submit", hit_engine):
        result, duplicate = answers_submit(annotator=annotator, assignment_id=hit["id"], answers=_answers(hit))
    assert result["status"] == "submitted" and not duplicate
    with exactly("submit_resent", hit_engine):
        assert answers_submit(annotator=annotator, assignment_id=hit["id"], answers=_answers(hit))[1] is True
    second, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    with exactly("return", hit_engine):
        assert assignment_return(annotator=annotator, assignment_id=second["id"]).status == "returned"


def test_next_with_gold_and_when_nothing_is_left(researcher, hit_engine):
    campaign = make_campaign(researcher, settings=["explicit"],
                             annotation={"hit_size": 2, "redundancy": 1, "gold_rate": 0.5})
    make_images(campaign, "explicit", 2)  # one gold, one real: the first HIT takes both
    campaign = open_campaign(campaign)
    gold = Question.objects.filter(campaign=campaign).order_by("pk").first()
    questions_gold_set(campaign=campaign, items=[{"question": gold.pk, "answer": "Yes"}])
    annotator, _ = make_annotator("qg", campaign=campaign)
    with exactly("next_gold", hit_engine):
        hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk, rng=random.Random(3))
    assert gold.pk in [q["id"] for q in hit["questions"]] and len(hit["questions"]) == 2  # gold inside hit_size
    answers_submit(annotator=annotator, assignment_id=hit["id"], answers=_answers(hit))
    with exactly("next_nothing_left", hit_engine):
        assert assignment_next(annotator=annotator, campaign_id=campaign.pk) == (None, False)


def test_next_with_expired_leases_and_a_late_submission(researcher, hit_engine):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2, "redundancy": 2})
    make_images(campaign, "explicit", 4)
    campaign = open_campaign(campaign)
    late, _ = make_annotator("ql", campaign=campaign)
    other, _ = make_annotator("qo", campaign=campaign)
    hit, _ = assignment_next(annotator=late, campaign_id=campaign.pk)
    Assignment.objects.filter(pk=hit["id"]).update(expires_at=timezone.now() - timedelta(minutes=1))
    with exactly("next_expired", hit_engine):
        taken, _ = assignment_next(annotator=other, campaign_id=campaign.pk)
    assert Assignment.objects.get(pk=hit["id"]).status == "expired"
    # The released questions went back to the pool (nearest to completion first: the same ones) and
    # still have room for the late submission's re-take (R = 2).
    assert {q["id"] for q in taken["questions"]} == {q["id"] for q in hit["questions"]}
    with exactly("submit_late", hit_engine):
        result, _ = answers_submit(annotator=late, assignment_id=hit["id"], answers=_answers(hit))
    assert result["status"] == "submitted"


def test_submit_with_a_quality_threshold(researcher, hit_engine):
    campaign = make_campaign(researcher, settings=["explicit"],
                             annotation={"hit_size": 2, "min_time_ms": 500, "low_quality_action": "pause"})
    make_images(campaign, "explicit", 4)
    campaign = open_campaign(campaign)
    annotator, _ = make_annotator("qq", campaign=campaign)
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    with exactly("submit_quality", hit_engine):
        answers_submit(annotator=annotator, assignment_id=hit["id"], answers=_answers(hit))


@pytest.mark.parametrize("token_engine", ["sql", "orm"])
def test_a_token_authenticated_request_is_one_statement(campaign, hit_engine, token_engine,
                                                        django_assert_num_queries):
    """The token, its user and the annotator profile in one statement (both token engines); the HIT
    engine's statements come on top of it, nothing else."""
    _, client = make_annotator("qt", campaign=campaign)
    with fastpath.forced("token_auth", token_engine == "sql" and connection.vendor == "postgresql"):
        with django_assert_num_queries(1):
            assert client.get("/api/annotators/me/").status_code == 200
        with CaptureQueriesContext(connection) as ctx:
            response = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
        assert response.status_code == 201
        assert len(_statements(ctx)) == 1 + COUNTS["next"][0 if hit_engine == "sql" else 1]
        with CaptureQueriesContext(connection) as ctx:
            submitted = client.post(f"/api/assignments/{response.json()['id']}/submit/",
                                    {"answers": _answers(response.json())}, format="json")
        assert submitted.status_code == 200
        assert len(_statements(ctx)) == 1 + COUNTS["submit"][0 if hit_engine == "sql" else 1]
        with CaptureQueriesContext(connection) as ctx:
            nxt = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
            beat = client.post(f"/api/assignments/{nxt.json()['id']}/heartbeat/")
        assert beat.status_code == 200
        assert len(_statements(ctx)) == 2 + COUNTS["next"][0 if hit_engine == "sql" else 1] + COUNTS["heartbeat"][0]


@pytest.mark.parametrize("token_engine", ["sql", "orm"])
def test_a_scoped_token_request_is_one_statement_more(campaign, hit_engine, token_engine):
    """A crowd work page's token (`s1.`, annotation/scoped_tokens.py): its user and annotator in one
    statement, and for a HIT-addressed endpoint (submit, heartbeat) one more that the HIT is the token's
    campaign's; with the token fast path both are prepared statements (the ORM compiled them on every
    request: +1.7 ms of CPU per chained HIT cycle, bench/README.md section 1, "Seventh round")."""
    from rest_framework.test import APIClient

    from annotation.scoped_tokens import scoped_token_issue
    from annotation.services.annotators import enrollment_consent

    annotator, _ = make_annotator("scoped-qc", campaign=campaign)
    other = make_campaign(campaign.owner, settings=["explicit"], annotation={"hit_size": 2, "redundancy": 1})
    make_images(other, "explicit", 2)
    other = open_campaign(other)
    enrollment_consent(annotator=annotator, campaign=other, consent=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + scoped_token_issue(user_id=annotator.user_id, campaign_id=campaign.pk))
    sql = token_engine == "sql" and connection.vendor == "postgresql"
    with fastpath.forced("token_auth", sql):
        with CaptureQueriesContext(connection) as ctx:
            response = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
        assert response.status_code == 201, response.content
        assert len(_statements(ctx)) == 1 + COUNTS["next"][0 if hit_engine == "sql" else 1]
        with CaptureQueriesContext(connection) as ctx:
            submitted = client.post(f"/api/assignments/{response.json()['id']}/submit/",
                                    {"answers": _answers(response.json())}, format="json")
        assert submitted.status_code == 200, submitted.content
        assert len(_statements(ctx)) == 2 + COUNTS["submit"][0 if hit_engine == "sql" else 1]
        # Another campaign's HIT of the same annotator: refused before anything is read or written.
        foreign = assignment_next(annotator=annotator, campaign_id=other.pk)[0]
        with CaptureQueriesContext(connection) as ctx:
            refused = client.post(f"/api/assignments/{foreign['id']}/submit/",
                                  {"answers": _answers(foreign)}, format="json")
        assert refused.status_code == 403 and f"campaign {campaign.pk}" in refused.json()["detail"]
        assert len(_statements(ctx)) == 2
        beyond = client.post("/api/assignments/99999999999999999999/heartbeat/")  # past bigint: refused, not a 500
        assert beyond.status_code in (403, 404), beyond.content
        annotator.user.is_active = False
        annotator.user.save(update_fields=["is_active"])
        inactive = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
        assert inactive.status_code == 401 and "inactive" in inactive.json()["detail"]
    if sql:
        with connection.cursor() as cur:
            cur.execute("SELECT statement FROM pg_prepared_statements")
            prepared = [" ".join(r[0].split()) for r in cur.fetchall()]
        assert any(p.startswith('SELECT u."id"') and 'WHERE u."id" = $1' in p for p in prepared), prepared
        assert "SELECT 1 FROM annotation_assignment WHERE id = $1 AND campaign_id = $2" in prepared


@pytest.mark.parametrize("token_engine", ["sql", "orm"])
def test_a_session_request_reads_the_annotator_in_one_prepared_statement(campaign, token_engine, researcher):
    """The work page's session (no token): Django loads the session and its user, then the annotator
    profile is one more statement, prepared on the token fast path (the ORM compiled it on every
    request: 0.44-0.48 -> 0.13 ms of CPU, bench/README.md section 1, "Seventh round"). A session user
    who is not an annotator gets the 403 that names the endpoint's audience."""
    from rest_framework.test import APIClient

    annotator, _ = make_annotator("session-qc", campaign=campaign)
    client = APIClient()
    client.force_login(annotator.user)
    sql = token_engine == "sql" and connection.vendor == "postgresql"
    with fastpath.forced("token_auth", sql):
        with CaptureQueriesContext(connection) as ctx:
            response = client.post(f"/api/campaigns/{campaign.pk}/assignments/")
        assert response.status_code == 201, response.content
        statements = [" ".join(q.split()) for q in _statements(ctx)]
        assert len(statements) == 3 + COUNTS["next"][0 if connection.vendor == "postgresql" else 1], statements
        assert sum('FROM "annotation_annotator" a WHERE a."user_id"' in q for q in statements) == int(sql)
        stranger = APIClient()
        stranger.force_login(researcher)
        refused = stranger.post(f"/api/campaigns/{campaign.pk}/assignments/")
        assert refused.status_code == 403 and "for annotators" in refused.json()["detail"]
    if sql:
        with connection.cursor() as cur:
            cur.execute("SELECT statement FROM pg_prepared_statements")
            assert any('FROM "annotation_annotator" a WHERE a."user_id" = $1' in r[0] for r in cur.fetchall())


def test_submit_with_adaptive_redundancy(researcher, hit_engine):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 2, "redundancy": {"min": 2, "max": 3, "threshold": 0.75}})
    make_images(campaign, "explicit", 4)
    campaign = open_campaign(campaign)
    annotator, _ = make_annotator("qa1", campaign=campaign)
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    with exactly("submit_adaptive", hit_engine):  # one answer of two wanted: nothing grows
        answers_submit(annotator=annotator, assignment_id=hit["id"], answers=_answers(hit))
    other, _ = make_annotator("qa2", campaign=campaign)
    hit, _ = assignment_next(annotator=other, campaign_id=campaign.pk)  # the same two (started first)
    with exactly("submit_adaptive_grow", hit_engine):  # Yes + No: a tie, one more wanted
        answers_submit(annotator=other, assignment_id=hit["id"], answers=[
            {"question": q["id"], "choice": q["choices"][1], "time_ms": 900} for q in hit["questions"]])
    assert sorted(Question.objects.filter(campaign=campaign).values_list("required", flat=True)) == [2, 2, 3, 3]
