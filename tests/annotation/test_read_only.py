"""Reads never write: the researcher's annotators table and payments (API and console page), the
questions list, the campaign progress and the annotator's task and qualification pages issue no
INSERT, UPDATE or DELETE, even with a HIT due for auto-approval (which the tables count as approved
while the beat task has not stored it yet) and a blocked annotator."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.hits import answers_submit, assignment_next
from annotation.models import Assignment
from annotation.services.quality import enrollment_action
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db

WRITE = re.compile(r"\b(INSERT\s+INTO|UPDATE\s+\"?\w+\"?\s+SET|DELETE\s+FROM)\b", re.IGNORECASE)


def test_the_write_pattern_tells_writes_from_row_locks():
    assert WRITE.search('UPDATE "annotation_assignment" SET "review" = \'approved\'')
    assert WRITE.search("WITH x AS (INSERT INTO t (a) VALUES (1)) SELECT 1")
    assert WRITE.search('DELETE FROM "annotation_aggregatedlabel" WHERE 1')
    assert not WRITE.search('SELECT 1 FROM "annotation_question" FOR NO KEY UPDATE SKIP LOCKED')
    assert not WRITE.search("SELECT 1 FOR UPDATE OF q")


@pytest.fixture
def busy(researcher):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2, "auto_approve_hours": 24})
    make_images(campaign, "explicit", 6)
    campaign = open_campaign(campaign)
    amy, amy_client = make_annotator("amy", campaign=campaign)
    bob, _ = make_annotator("bob", campaign=campaign)
    hits = {}
    for who in (amy, bob):
        hit, _ = assignment_next(annotator=who, campaign_id=campaign.pk)
        answers_submit(annotator=who, assignment_id=hit["id"],
                       answers=[{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in hit["questions"]])
        hits[who.user.username] = hit["id"]
    Assignment.objects.filter(pk=hits["amy"]).update(submitted_at=timezone.now() - timedelta(hours=30))
    enrollment_action(campaign=campaign, annotator_id=bob.pk, action="block", reason="test")
    return campaign, amy_client, hits


def test_gets_issue_no_writes(busy, api, researcher):
    campaign, amy_client, hits = busy
    console = Client()
    console.force_login(researcher)
    reads = [
        (api, f"/api/campaigns/{campaign.pk}/annotators/"),
        (api, f"/api/campaigns/{campaign.pk}/payments.csv"),
        (api, f"/api/campaigns/{campaign.pk}/questions/"),
        (api, f"/api/campaigns/{campaign.pk}/qualifications/"),
        (api, f"/api/campaigns/{campaign.pk}/"),
        (console, f"/console/campaigns/{campaign.pk}/annotators/"),
        (console, f"/console/campaigns/{campaign.pk}/"),
        (amy_client, f"/api/campaigns/{campaign.pk}/task/"),
        (amy_client, f"/api/campaigns/{campaign.pk}/qualifications/"),
        (amy_client, "/api/annotators/me/"),
    ]
    for client, url in reads:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        writes = [q["sql"][:120] for q in ctx.captured_queries if WRITE.search(q["sql"])]
        assert not writes, (url, writes)
    # The due HIT counts as approved in what was read, and is still pending in the database.
    table = {r["username"]: r for r in api.get(f"/api/campaigns/{campaign.pk}/annotators/").json()["results"]}
    assert table["amy"]["hits_approved"] == 1 and table["bob"]["hits_approved"] == 0
    assert Assignment.objects.get(pk=hits["amy"]).review == "pending"
    assert b"1 (1)" in console.get(f"/console/campaigns/{campaign.pk}/annotators/").content
