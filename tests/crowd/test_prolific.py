"""Prolific study links: PROLIFIC_PID -> one annotator, the completion redirect once the quota of
HITs is submitted (or nothing is left), the screen-out redirect after a failed test, and 400 pages
for bad links. The Django test client plays the participant (session login, as in a browser)."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotation.models import Annotator, Answer, Assignment
from annotation.services.qualification import qualification_create
from campaigns.models import Campaign
from tests.builders.crowd import crowd_campaign

pytestmark = pytest.mark.django_db
DONE = "https://app.prolific.com/submissions/complete?cc="


def link(campaign: Campaign, pid: str = "5f0c0ffee0000000000000a1", **extra: str) -> str:
    params = {"PROLIFIC_PID": pid, "STUDY_ID": "st0000000001", "SESSION_ID": "se0000000001", **extra}
    return f"/prolific/{campaign.pk}/?" + "&".join(f"{k}={v}" for k, v in params.items())


def _work_one_hit(client: Client, campaign: Campaign) -> int:
    assert client.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True},
                       content_type="application/json").status_code == 200
    hit = client.post(f"/api/campaigns/{campaign.pk}/assignments/", {}, content_type="application/json").json()
    answers = [{"question": q["id"], "choice": "No", "time_ms": 800} for q in hit["questions"]]
    response = client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": answers},
                           content_type="application/json")
    assert response.status_code == 200
    return hit["id"]


def test_completion_redirect_after_the_quota(client: Client, researcher: User) -> None:
    campaign = crowd_campaign(researcher, prolific={"completion_code": "C0MPL3TE", "screen_out_code": "SCR33N",
                                                    "hits_per_participant": 2})
    page = client.get(link(campaign))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-mode="prolific"' in html and f'data-finish-url="/prolific/{campaign.pk}/finish/"' in html
    annotator = Annotator.objects.get(prolific_pid="5f0c0ffee0000000000000a1")
    assert int(client.session["_auth_user_id"]) == annotator.user_id
    # Not done yet: finish sends the participant back to the study page (same parameters).
    response = client.get(f"/prolific/{campaign.pk}/finish/")
    assert response.status_code == 302 and response["Location"].startswith(f"/prolific/{campaign.pk}/?PROLIFIC_PID=")
    _work_one_hit(client, campaign)
    assert client.get(f"/prolific/{campaign.pk}/finish/")["Location"].startswith(f"/prolific/{campaign.pk}/?")
    _work_one_hit(client, campaign)
    response = client.get(f"/prolific/{campaign.pk}/finish/")
    assert response.status_code == 302 and response["Location"] == DONE + "C0MPL3TE"
    # Coming back with the link after the quota: straight to the completion URL, nothing leased.
    response = client.get(link(campaign))
    assert response.status_code == 302 and response["Location"] == DONE + "C0MPL3TE"
    assert Assignment.objects.filter(annotator=annotator, status="submitted").count() == 2
    assert Answer.objects.filter(annotator=annotator).count() == 4


def test_no_work_left_completes_and_completion_url_override(client: Client, researcher: User, settings: Any) -> None:
    settings.PROLIFIC_COMPLETION_URL = "https://prolific.example/done"
    campaign = crowd_campaign(researcher, images=1, prolific={"completion_code": "ABC", "hits_per_participant": 5})
    client.get(link(campaign))
    _work_one_hit(client, campaign)  # the only question: nothing left for this participant
    assert client.get(f"/prolific/{campaign.pk}/finish/")["Location"] == "https://prolific.example/done?cc=ABC"
    campaign.spec["crowd"]["prolific"]["completion_url"] = "https://app.prolific.com/submissions/complete?cc=XYZ"
    campaign.save(update_fields=["spec"])
    assert client.get(f"/prolific/{campaign.pk}/finish/")["Location"] == DONE + "XYZ"


def test_screen_out_after_a_failed_qualification(client: Client, researcher: User) -> None:
    campaign = crowd_campaign(researcher, prolific={"completion_code": "OK1", "screen_out_code": "SCR33N"})
    image = campaign.images.order_by("pk").first()
    qual = qualification_create(
        campaign=campaign, name="t", family=campaign.questions.first().family,
        items=[{"image": image.pk, "correct": "Yes"}], retake_after_minutes=0, max_attempts=1)
    assert client.get(link(campaign)).status_code == 200
    client.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, content_type="application/json")
    assert client.get(f"/prolific/{campaign.pk}/finish/")["Location"].startswith(f"/prolific/{campaign.pk}/?")
    attempt = client.post(f"/api/qualifications/{qual.pk}/attempts/", {"answers": ["No"]},
                          content_type="application/json")
    assert attempt.status_code == 201 and attempt.json()["attempts_left"] == 0
    assert client.get(f"/prolific/{campaign.pk}/finish/")["Location"] == DONE + "SCR33N"
    assert client.get(link(campaign))["Location"] == DONE + "SCR33N"
    assert not Assignment.objects.exists()


def test_no_screen_out_code_shows_a_page(client: Client, researcher: User) -> None:
    campaign = crowd_campaign(researcher, prolific={"completion_code": "OK1"})
    image = campaign.images.order_by("pk").first()
    qual = qualification_create(
        campaign=campaign, name="t", family=campaign.questions.first().family,
        items=[{"image": image.pk, "correct": "Yes"}], retake_after_minutes=0, max_attempts=1)
    client.get(link(campaign))
    client.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, content_type="application/json")
    client.post(f"/api/qualifications/{qual.pk}/attempts/", {"answers": ["No"]}, content_type="application/json")
    response = client.get(f"/prolific/{campaign.pk}/finish/")
    assert response.status_code == 200 and "did not qualify" in response.content.decode()


def test_bad_links_are_a_clear_400(client: Client, researcher: User) -> None:
    campaign = crowd_campaign(researcher, prolific={"completion_code": "OK1"})
    response = client.get(f"/prolific/{campaign.pk}/?PROLIFIC_PID=abc&STUDY_ID=st1")
    assert response.status_code == 400
    assert "SESSION_ID is missing" in response.content.decode() and "Prolific" in response.content.decode()
    response = client.get(f"/prolific/{campaign.pk}/?PROLIFIC_PID=a%20b&STUDY_ID=st1&SESSION_ID=se1")
    assert response.status_code == 400 and "PROLIFIC_PID is missing or not a Prolific id" in response.content.decode()
    assert not Annotator.objects.exists()
    # The finish page without a study session.
    assert client.get(f"/prolific/{campaign.pk}/finish/").status_code == 400
    assert client.get(f"/prolific/{campaign.pk + 999}/?PROLIFIC_PID=a&STUDY_ID=b&SESSION_ID=c").status_code == 404


def test_the_same_pid_twice_is_one_annotator(researcher: User) -> None:
    campaign = crowd_campaign(researcher, prolific={"completion_code": "OK1"})
    first, second = Client(), Client()
    assert first.get(link(campaign, "PIDONE")).status_code == 200
    assert second.get(link(campaign, "PIDONE", SESSION_ID="se0000000002")).status_code == 200
    assert Annotator.objects.filter(prolific_pid="PIDONE").count() == 1
    assert int(first.session["_auth_user_id"]) == int(second.session["_auth_user_id"])
    assert first.get(link(campaign, "PIDTWO")).status_code == 200  # another participant in the same browser
    assert Annotator.objects.count() == 2
    assert int(first.session["_auth_user_id"]) == Annotator.objects.get(prolific_pid="PIDTWO").user_id
