"""The MTurk ExternalQuestion page without a browser: preview leases nothing, accept maps the worker
and the assignment, turkSubmitTo is checked against the allow-list, framing is allowed for MTurk
only, and the qualification pass is granted on MTurk through the injected client."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotator, Assignment, AssignmentItem, Enrollment, QualificationAttempt
from annotation.services.qualification import qualification_create
from campaigns.models import Campaign
from crowd import services
from crowd.models import MTurkQualificationType
from tests.builders.crowd import FakeMTurk, accept_params

pytestmark = pytest.mark.django_db


def _token_client(worker: str) -> APIClient:
    api = APIClient()
    annotator = Annotator.objects.get(mturk_worker_id=worker)
    api.credentials(HTTP_AUTHORIZATION=f"Token {services.api_token(annotator)}")
    return api


def test_preview_shows_the_task_disabled_and_leases_nothing(client: Client, campaign: Campaign) -> None:
    response = client.get(f"/mturk/{campaign.pk}/", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE",
                                                     "hitId": "3HIT1"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "Accept the HIT to start" in page
    assert "Do you see a person" in page  # a sample question
    assert 'class="choice" disabled' in page and "work.js" not in page
    assert not Assignment.objects.exists() and not Annotator.objects.exists()
    assert "_auth_user_id" not in client.session
    # Framable by MTurk only; everything else on the site keeps DENY.
    assert "X-Frame-Options" not in response
    assert "frame-ancestors 'self' https://*.mturk.com" in response["Content-Security-Policy"]
    assert client.get(f"/work/{campaign.pk}/signup/")["X-Frame-Options"] == "DENY"


def test_accept_maps_the_worker_and_the_assignment_idempotently(client: Client, campaign: Campaign) -> None:
    response = client.get(f"/mturk/{campaign.pk}/", accept_params())
    assert response.status_code == 200
    page = response.content.decode()
    annotator = Annotator.objects.get(mturk_worker_id="AWORKER1")
    assert annotator.user.username == "mturk-AWORKER1" and not annotator.user.has_usable_password()
    assert int(client.session["_auth_user_id"]) == annotator.user_id  # logged in with a session
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in page
    assert 'data-mode="mturk"' in page and 'value="3ASSIGN1"' in page
    assert "X-Frame-Options" not in response
    # The same worker again: the same annotator.
    client.get(f"/mturk/{campaign.pk}/", accept_params(assignment="3ASSIGN2"))
    assert Annotator.objects.filter(mturk_worker_id="AWORKER1").count() == 1

    api = _token_client("AWORKER1")
    body = {"assignmentId": "3ASSIGN1", "hitId": "3HIT1"}
    assert api.post(f"/api/mturk/{campaign.pk}/assignment/", body, format="json").status_code == 403  # consent first
    assert api.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json").status_code == 200
    first = api.post(f"/api/mturk/{campaign.pk}/assignment/", body, format="json")
    assert first.status_code == 201 and len(first.json()["questions"]) == 2
    product = Assignment.objects.get(pk=first.json()["id"])
    assert (product.external_assignment_id, product.external_hit_id) == ("3ASSIGN1", "3HIT1")
    again = api.post(f"/api/mturk/{campaign.pk}/assignment/", body, format="json")
    assert again.status_code == 200 and again.json()["id"] == product.pk
    # Another MTurk assignment while this one is held: refused, nothing moved.
    other = api.post(f"/api/mturk/{campaign.pk}/assignment/", {"assignmentId": "3ASSIGN2", "hitId": "3HIT2"},
                     format="json")
    assert other.status_code == 409 and Assignment.objects.count() == 1
    # Submitted through the normal API; the same assignmentId then says "submitted".
    answers = [{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in first.json()["questions"]]
    assert api.post(f"/api/assignments/{product.pk}/submit/", {"answers": answers}, format="json").status_code == 200
    done = api.post(f"/api/mturk/{campaign.pk}/assignment/", body, format="json")
    assert done.status_code == 200 and done.json()["status"] == "submitted" and done.json()["id"] == product.pk


def test_an_expired_lease_moves_the_mturk_ids_to_a_new_hit(client: Client, campaign: Campaign) -> None:
    client.get(f"/mturk/{campaign.pk}/", accept_params())
    api = _token_client("AWORKER1")
    api.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json")
    body = {"assignmentId": "3ASSIGN1", "hitId": "3HIT1"}
    first = api.post(f"/api/mturk/{campaign.pk}/assignment/", body, format="json").json()
    Assignment.objects.filter(pk=first["id"]).update(expires_at="2000-01-01T00:00:00Z")
    second = api.post(f"/api/mturk/{campaign.pk}/assignment/", body, format="json")
    assert second.status_code == 201 and second.json()["id"] != first["id"]
    assert Assignment.objects.get(pk=first["id"]).external_assignment_id is None
    assert Assignment.objects.get(external_assignment_id="3ASSIGN1").pk == second.json()["id"]
    # Another worker cannot take over this MTurk assignment.
    client.get(f"/mturk/{campaign.pk}/", accept_params(worker="AWORKER2"))
    intruder = _token_client("AWORKER2")
    intruder.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json")
    assert intruder.post(f"/api/mturk/{campaign.pk}/assignment/", body, format="json").status_code == 404


@pytest.mark.parametrize("submit_to", [
    "https://evil.example", "https://www.mturk.com.evil.example", "http://www.mturk.com",
    "https://www.mturk.com/elsewhere", "https://user@www.mturk.com", "https://www.mturk.com?x=1",
    "javascript:alert(1)", "",
])
def test_turk_submit_to_outside_the_allow_list_is_refused(client: Client, campaign: Campaign, submit_to: str) -> None:
    response = client.get(f"/mturk/{campaign.pk}/", accept_params(submit_to=submit_to))
    assert response.status_code == 400
    assert "turkSubmitTo" in response.content.decode()
    assert not Annotator.objects.exists()


def test_allowed_submit_hosts_and_bad_ids(client: Client, campaign: Campaign, settings: Any) -> None:
    assert services.mturk_submit_url("https://www.mturk.com") == "https://www.mturk.com/mturk/externalSubmit"
    assert services.mturk_submit_url("https://workersandbox.mturk.com/") == \
        "https://workersandbox.mturk.com/mturk/externalSubmit"
    assert services.mturk_submit_url("http://127.0.0.1:8123") is None
    settings.MTURK_SUBMIT_HOSTS_EXTRA = ["http://127.0.0.1:8123"]
    assert services.mturk_submit_url("http://127.0.0.1:8123") == "http://127.0.0.1:8123/mturk/externalSubmit"
    assert services.mturk_submit_url("http://127.0.0.1:8124") is None
    response = client.get(f"/mturk/{campaign.pk}/", accept_params(worker="<script>"))
    assert response.status_code == 400 and "workerId" in response.content.decode()
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.DRAFT)
    assert client.get(f"/mturk/{campaign.pk}/", accept_params()).status_code == 404  # drafts are not revealed


def test_a_pass_on_our_page_grants_the_mturk_qualification(client: Client, campaign: Campaign,
                                                          fake_mturk: FakeMTurk) -> None:
    image = campaign.images.order_by("pk").first()
    qual = qualification_create(
        campaign=campaign, name="t", family=campaign.questions.first().family,
        items=[{"image": image.pk, "correct": "Yes"}], retake_after_minutes=0, max_attempts=3)
    MTurkQualificationType.objects.create(qualification=qual, qualification_type_id="QTYPE1")
    client.get(f"/mturk/{campaign.pk}/", accept_params())
    api = _token_client("AWORKER1")
    api.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json")
    failed = api.post(f"/api/mturk/qualifications/{qual.pk}/attempts/", {"answers": ["No"]}, format="json")
    assert failed.status_code == 201 and failed.json()["passed"] is False and fake_mturk.calls == []
    fake_mturk.fail = True  # MTurk down: the pass on our page stands, the grant is reported as not done
    passed = api.post(f"/api/mturk/qualifications/{qual.pk}/attempts/", {"answers": ["Yes"]}, format="json")
    assert passed.status_code == 201 and passed.json()["passed"] is True and passed.json()["mturk_granted"] is False
    assert QualificationAttempt.objects.filter(passed=True).count() == 1
    assert fake_mturk.calls == [("associate_qualification_with_worker", {
        "QualificationTypeId": "QTYPE1", "WorkerId": "AWORKER1", "IntegerValue": 100, "SendNotification": False})]
    # A second worker, MTurk up: granted.
    fake_mturk.fail = False
    client.get(f"/mturk/{campaign.pk}/", accept_params(worker="AWORKER2", assignment="3ASSIGN9"))
    api2 = _token_client("AWORKER2")
    api2.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json")
    ok = api2.post(f"/api/mturk/qualifications/{qual.pk}/attempts/", {"answers": ["Yes"]}, format="json")
    assert ok.json()["mturk_granted"] is True and fake_mturk.calls[-1][1]["WorkerId"] == "AWORKER2"
    assert Enrollment.objects.filter(campaign=campaign, consented_at__isnull=False).count() == 2
    assert not AssignmentItem.objects.exists()
