"""The hand-written PostgreSQL statements of the HIT engine against the ORM versions they replace:
majority labels on random data (corrections, blocked annotators, gold questions, stale labels),
settings parsed from the stored spec, and token authentication."""
from __future__ import annotations

import random

import pytest
from django.db import connection
from django.utils import timezone

from annotation.hits import pg
from annotation.labels import labels_recompute, labels_write, labels_write_bulk
from annotation.models import AggregatedLabel, Answer, Enrollment, Question
from annotation.spec_section import annotation_settings
from tests.builders.campaigns import hit_submit_all as _answer_all
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("the prepared SQL is PostgreSQL's; CI runs it there")


def _labels(campaign):
    return {lab.question_id: (lab.label, lab.votes, lab.answers, lab.tie)
            for lab in AggregatedLabel.objects.filter(question__campaign=campaign)}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("exclude_blocked", [True, False])
@pytest.mark.parametrize("write", [labels_write, labels_write_bulk], ids=["submit", "bulk-import"])
def test_sql_labels_equal_the_orm_labels_on_random_answers(researcher, seed, exclude_blocked, write):
    rng = random.Random(seed)
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 5})
    make_images(campaign, "explicit", 12)
    campaign = open_campaign(campaign)
    questions = list(Question.objects.filter(campaign=campaign).order_by("pk"))
    gold = questions[0]
    Question.objects.filter(pk=gold.pk).update(is_gold=True, gold_answer="Yes")
    annotators = [make_annotator(f"l{seed}-{i}", campaign=campaign)[0] for i in range(6)]
    Enrollment.objects.filter(campaign=campaign, annotator=annotators[0]).update(status=Enrollment.Status.BLOCKED)
    now = timezone.now()
    answers = [Answer(campaign=campaign, question=q, annotator=a, choice=rng.choice(["Yes", "No"]), created_at=now)
               for q in questions for a in annotators if rng.random() < 0.6]
    # A question answered only by the blocked annotator, one with no answer at all, one tied.
    answers = [a for a in answers if a.question_id not in (questions[1].pk, questions[2].pk, questions[3].pk)]
    answers += [Answer(campaign=campaign, question=questions[1], annotator=annotators[0], choice="Yes", created_at=now),
                Answer(campaign=campaign, question=questions[3], annotator=annotators[1], choice="Yes", created_at=now),
                Answer(campaign=campaign, question=questions[3], annotator=annotators[2], choice="No", created_at=now)]
    Answer.objects.bulk_create(answers)
    # Corrections: the newest of a chain counts.
    for original in rng.sample([a for a in answers if a.question_id not in (questions[1].pk, questions[3].pk)], 5):
        Answer.objects.create(campaign=campaign, question_id=original.question_id, annotator=original.annotator,
                              choice="No" if original.choice == "Yes" else "Yes", corrects=original,
                              source="correction")
    ids = [q.pk for q in questions]
    # Stale labels that must go (no counted answer any more) or be overwritten.
    AggregatedLabel.objects.bulk_create([AggregatedLabel(question_id=q, label="Yes", votes={"Yes": 9}, answers=9)
                                         for q in ids])

    labels_recompute(campaign_id=campaign.pk, question_ids=ids, exclude_blocked=exclude_blocked)
    expected = _labels(campaign)
    AggregatedLabel.objects.filter(question__campaign=campaign).update(label="x", votes={}, answers=0, tie=False)
    AggregatedLabel.objects.get_or_create(question=questions[2], defaults={"label": "Yes", "votes": {}, "answers": 1})
    written = write(campaign_id=campaign.pk, question_ids=ids, exclude_blocked=exclude_blocked, now=timezone.now())
    with connection.cursor() as cursor:  # the bulk statement's planner setting does not outlive it
        cursor.execute("SELECT current_setting('enable_nestloop')")
        assert cursor.fetchone()[0] == "on"
    got = _labels(campaign)
    assert got == expected
    assert written == len(expected)
    assert gold.pk not in got and questions[2].pk not in got
    assert (questions[1].pk in got) is (not exclude_blocked)
    assert got[questions[3].pk] == ("tie", {"Yes": 1, "No": 1}, 2, True)


def test_settings_of_equals_annotation_settings(researcher):
    campaign = make_campaign(researcher, settings=["explicit"],
                             annotation={"hit_size": 7, "redundancy": 4, "gold_rate": 0.1, "reward": "0.05"})
    with connection.cursor() as cur:
        cur.execute("SELECT kind, (spec -> 'annotation')::text FROM campaigns_campaign WHERE id = %s", [campaign.pk])
        kind, section = cur.fetchone()
    assert pg.settings_of(kind, section) == annotation_settings(campaign)
    assert pg.settings_of(kind, None) == annotation_settings(type(campaign)(kind=kind, spec={}))


def test_token_authentication_loads_user_and_annotator_in_one_statement(researcher, django_assert_num_queries):
    campaign = make_campaign(researcher, settings=["explicit"])
    make_images(campaign, "explicit", 2)
    open_campaign(campaign)
    annotator, client = make_annotator("tok", campaign=campaign)
    with django_assert_num_queries(1):
        response = client.get("/api/annotators/me/")
    assert response.status_code == 200, response.content
    assert response.json() == {"id": annotator.pk, "username": "tok", "mturk_worker_id": None, "prolific_pid": None,
                               "demographics": {}, "demographics_hidden": False}
    from rest_framework.test import APIClient

    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    bad = stranger.get("/api/annotators/me/")
    assert bad.status_code == 401 and "Invalid token" in bad.json()["detail"]
    annotator.user.is_active = False
    annotator.user.save(update_fields=["is_active"])
    inactive = client.get("/api/annotators/me/")
    assert inactive.status_code == 401 and "inactive" in inactive.json()["detail"]


def test_hot_statements_are_prepared_on_the_server(gep_campaign, worker):
    """The SQL engine's statements are server-side prepared (planned once per connection)."""
    from django.db import connection

    _, client = worker
    for _ in range(2):
        hit = client.post(f"/api/campaigns/{gep_campaign.pk}/assignments/").json()
        assert _answer_all(client, hit).status_code == 200
    with connection.cursor() as cur:
        cur.execute("SELECT statement FROM pg_prepared_statements")
        prepared = " ".join(r[0] for r in cur.fetchall())
    for marker in ("WITH expired AS", "FOR NO KEY UPDATE OF q SKIP LOCKED", "WITH hit AS",
                   "FOR NO KEY UPDATE OF a", "WITH answers AS", "WITH given AS", 'FROM "authtoken_token"'):
        assert marker in prepared, marker


def _plan_counts() -> dict[str, tuple[int, int]]:
    with connection.cursor() as cur:
        cur.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        return {sql: (generic, custom) for sql, generic, custom in cur.fetchall()}


def test_one_question_hits_reuse_the_generic_plans(researcher):
    """With its arrays as plain parameters, a statement given a one-element array got a custom plan that
    PostgreSQL costed below the generic one (which assumes ten elements), so the HIT's write, the submit's
    write and the labels were planned again on every one-question HIT (bench/profile_hit.py --plans:
    0 generic / 621 custom; ~0.5 ms of PostgreSQL CPU per cycle). Behind a scalar subquery the arrays'
    lengths are unknown to both plans: after PostgreSQL's five custom plans the generic one is kept."""
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 1})
    make_images(campaign, "explicit", 14)
    campaign = open_campaign(campaign)
    _, client = make_annotator("single", campaign=campaign)
    before = _plan_counts()
    cycles = 12
    for _ in range(cycles):
        hit = client.post(f"/api/campaigns/{campaign.pk}/assignments/").json()
        assert len(hit["questions"]) == 1
        assert _answer_all(client, hit).status_code == 200
    after = _plan_counts()
    for marker in ("WITH hit AS", "WITH answers AS", "WITH given AS"):
        [sql] = [s for s in after if marker in s]
        generic = after[sql][0] - before.get(sql, (0, 0))[0]
        custom = after[sql][1] - before.get(sql, (0, 0))[1]
        assert generic + custom == cycles, (marker, generic, custom)
        assert custom <= 5, (marker, generic, custom)  # only PostgreSQL's first five executions



def test_pool_statements_carry_their_limit_as_a_number():
    """With LIMIT as a parameter PostgreSQL's generic plan assumed 10% of the pool and always looked
    dearer than a plan for the actual limit, so the pool statement was planned again on every HIT
    (bench/README.md section 1, third round: 0 generic / 621 custom plans in 621 executions)."""
    for sql in (pg.NEXT_POOL, pg.NEXT_GOLD):
        written = pg.limited(sql, 20)
        assert "%(limit)s" not in written and written.count("LIMIT 20\n") + written.endswith("LIMIT 20") == 1
        assert written.replace("LIMIT 20", "LIMIT %(limit)s") == sql
    assert pg.limited(pg.NEXT_POOL, 20) is pg.limited(pg.NEXT_POOL, 20)  # one text per limit: one prepared statement
    for bad in (0, -3, True, 2.5, "10; DROP TABLE x"):
        with pytest.raises(ValueError, match="limit must be a positive int"):
            pg.limited(pg.NEXT_POOL, bad)


@pytest.mark.parametrize("sql", ["LABELS", "LABELS_COUNTS"])
def test_labels_statement_reads_answers_by_the_question_index_whatever_the_statistics(researcher, sql):
    """With `question_id = ANY(...)` over the answer table, a campaign of thousands of questions and
    statistics of a nearly empty answer table (ANALYZE right after a TRUNCATE, autovacuum off: the
    benchmark machine) made the submit's labels statement scan every answer on every submit
    (bench/README.md section 1, "Fourth round"). Each given question's answers are now an index lookup,
    in the custom and the generic plan."""
    from annotation import labels as labels_module

    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 5})
    make_images(campaign, "explicit", 40)
    campaign = open_campaign(campaign)
    first = list(Question.objects.filter(campaign=campaign).order_by("pk"))
    Question.objects.bulk_create([  # ~4,000 questions: driving the statement from the campaign's questions is dear
        Question(campaign=campaign, image_id=q.image_id, slot=f"{q.slot}-{i}", family=q.family, setting=q.setting,
                 text=q.text, choices=q.choices, metadata=q.metadata) for q in first for i in range(100)])
    annotators = [make_annotator(f"ix-{i}", campaign=campaign)[0] for i in range(3)]
    with connection.cursor() as cur:
        cur.execute("ANALYZE annotation_question, annotation_answer")  # the answers' statistics: an empty table
    questions = list(Question.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True))
    now = timezone.now()
    Answer.objects.bulk_create([Answer(campaign=campaign, question_id=q, annotator=a, choice="Yes", created_at=now)
                                for q in questions for a in annotators])
    for mode, rows in _plans(getattr(labels_module, sql), [campaign.pk, questions[:10], True, now]):
        plan = "\n".join(r[0] for r in rows)
        given = plan[plan.index("CTE given"):plan.index("CTE labels")]
        assert "Seq Scan" not in given and "Index Scan" in given and "annotation_answer" in given, (mode, given)


@pytest.mark.parametrize("sql", ["LABELS", "LABELS_COUNTS"])
def test_labels_statement_reads_the_blocked_annotators_once(researcher, sql):
    """The blocked annotators are read once per statement and hashed, not looked up for each answer: on a
    small enrollment table the planner scanned it once per answer (30 scans for a 10-question HIT at R = 3,
    0.3 ms of the 1.3 ms statement: bench/README.md section 1, "Eighth round"). Checked on what the
    statement did (EXPLAIN ANALYZE: the enrollment scan's loops), in the custom and the generic plan, with
    blocked annotators among those who answered; the labels themselves are the ORM's (the random-answers
    test above)."""
    import json

    from annotation import labels as labels_module

    campaign = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 5})
    make_images(campaign, "explicit", 10)
    campaign = open_campaign(campaign)
    annotators = [make_annotator(f"bl-{i}", campaign=campaign)[0] for i in range(5)]
    Enrollment.objects.filter(campaign=campaign, annotator__in=annotators[:2]).update(status=Enrollment.Status.BLOCKED)
    questions = list(Question.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True))[:10]
    now = timezone.now()
    Answer.objects.bulk_create([Answer(campaign=campaign, question_id=q, annotator=a, choice="Yes", created_at=now)
                                for q in questions for a in annotators])
    with connection.cursor() as cur:
        cur.execute("ANALYZE annotation_enrollment")
    for mode, rows in _plans(getattr(labels_module, sql), [campaign.pk, questions, True, now],
                             explain="EXPLAIN (ANALYZE, FORMAT JSON)"):
        raw = rows[0][0]
        plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
        scans = [node for node in _nodes(plan) if node.get("Relation Name") == "annotation_enrollment"]
        assert scans, mode
        assert all(node["Actual Loops"] <= 1 for node in scans), (mode, [n["Actual Loops"] for n in scans])
    labelled = AggregatedLabel.objects.get(question_id=questions[0])
    assert labelled.votes == {"Yes": 3} and labelled.answers == 3  # the two blocked annotators left out


def _nodes(plan):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def _plans(sql, params, explain="EXPLAIN"):
    """A labels statement prepared as the server prepares it, explained with `params` (campaign, questions,
    exclude_blocked, now) under a forced custom plan, then a forced generic one: (mode, EXPLAIN's rows)."""
    with connection.cursor() as cur:
        for mode in ("force_custom_plan", "force_generic_plan"):
            cur.execute(f"SET LOCAL plan_cache_mode = {mode}")
            cur.execute("PREPARE labels_plan AS " + _numbered(sql))
            cur.execute(f"{explain} EXECUTE labels_plan(%s, %s::bigint[], %s, %s)", params)
            rows = cur.fetchall()
            cur.execute("DEALLOCATE labels_plan")
            yield mode, rows


def _numbered(sql):
    """The named placeholders of a labels statement as $1..$4 (campaign, questions, exclude_blocked, now)."""
    for i, name in enumerate(("campaign", "questions", "exclude_blocked", "now"), start=1):
        sql = sql.replace(f"%({name})s", f"${i}")
    return sql


def test_bulk_labels_are_planned_without_nested_loops_and_the_setting_is_set_back(researcher, monkeypatch):
    """The import's labels statement: its answers were written in the same transaction, so statistics
    call them one row and a nested loop looked up each answer's question; it runs with nested loops off
    (hash joins), and only it: the submit's statement keeps its index lookups (bench/README.md section 2)."""
    from annotation import prepared

    campaign = make_campaign(researcher, settings=["explicit"])
    make_images(campaign, "explicit", 2)
    campaign = open_campaign(campaign)
    seen = []
    run = prepared.run

    def spy(sql, params):
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('enable_nestloop')")
            seen.append(cursor.fetchone()[0])
        return run(sql, params)

    monkeypatch.setattr(prepared, "run", spy)
    ids = list(Question.objects.filter(campaign=campaign).values_list("pk", flat=True))
    labels_write_bulk(campaign_id=campaign.pk, question_ids=ids, exclude_blocked=True, now=timezone.now())
    labels_write(campaign_id=campaign.pk, question_ids=ids, exclude_blocked=True, now=timezone.now())
    assert seen == ["off", "on"]
