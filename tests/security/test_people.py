"""Issue 24, "Demographics and crowd identities": an unverified platform claim reads back nothing,
external ids follow one rule and a claim never blocks the platform's own flow, a made-up Prolific id
earns no completion code, profile demographics are documented fields only and count nowhere, and the
demographics release rule survives differencing (before/after polling, `other` from the total,
`min_group=2`). Every test goes through HTTP (or the import the API calls)."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from annotation.demographics import default_section
from annotation.models import Annotator, DemographicsResponse
from annotation.services.annotators import annotator_create
from campaigns.models import Campaign
from crowd.mturk_batch import BatchImportError, mturk_batch_import
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from tests.builders.crowd import MAPPING, M, W, accept_params, batch_csv, crowd_campaign, mturk_page, small  # noqa: F401

pytestmark = pytest.mark.django_db

PASSWORD = "Squat-Secret-pass-9"


def _asking(campaign: Campaign) -> Campaign:
    campaign.spec["annotation"]["demographics"] = default_section(ask=True)
    campaign.save(update_fields=["spec"])
    return campaign


def _demographics(api: Any, campaign: Campaign, answers: dict[str, str]) -> Any:
    return api.post(f"/api/campaigns/{campaign.pk}/demographics/",
                    {"consent": True, "consent_version": "1", "answers": answers}, format="json")


def test_an_unverified_mturk_claim_may_answer_but_reads_back_nothing(researcher: User) -> None:
    campaign = _asking(crowd_campaign(researcher))
    _, victim = mturk_page(campaign, worker="AVICTIM1", assignment="3VASSIGN", hit="3VHIT")
    assert victim.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json").status_code == 200
    assert _demographics(victim, campaign, {"gender": "self_describe", "gender_self_described": "private words",
                                            "age_band": "25-34"}).status_code == 200
    hit = victim.post(f"/api/mturk/{campaign.pk}/assignment/", {"assignmentId": "3VASSIGN", "hitId": "3VHIT"},
                      format="json").json()
    answers = [{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in hit["questions"]]
    assert victim.post(f"/api/assignments/{hit['id']}/submit/", {"answers": answers}, format="json").status_code == 200
    # Anyone who knows the worker id opens the same link (another assignment) ...
    stranger_browser, stranger = mturk_page(campaign, worker="AVICTIM1", assignment="3SASSIGN", hit="3SHIT")
    form = stranger.get(f"/api/campaigns/{campaign.pk}/demographics/").json()
    assert form["response"] is None and form["response_hidden"] is True
    me = stranger_browser.get("/api/annotators/me/").json()
    assert me["demographics"] == {} and me["demographics_hidden"] is True
    for reply in (stranger_browser.get(f"/api/campaigns/{campaign.pk}/demographics/"),
                  stranger_browser.get("/api/annotators/me/"), stranger.get(f"/api/campaigns/{campaign.pk}/task/")):
        assert "private words" not in reply.content.decode()
    # ... the victim's submitted HIT comes back as its status only: no questions, answers or pay.
    again = stranger.post(f"/api/mturk/{campaign.pk}/assignment/", {"assignmentId": "3VASSIGN", "hitId": "3VHIT"},
                          format="json").json()
    assert set(again) == {"id", "status", "submitted_at", "external_assignment_id"}
    # It may still answer and write new demographics (it cannot be told apart from the worker).
    assert _demographics(stranger, campaign, {"age_band": "45-54"}).status_code == 200
    assert DemographicsResponse.objects.get(campaign=campaign).answers == {"age_band": "45-54"}
    # A password account sees its own answers (it logged in with its password).
    owner, client = make_annotator("olga", campaign=campaign)
    assert _demographics(client, campaign, {"age_band": "25-34"}).status_code == 200
    assert client.get(f"/api/campaigns/{campaign.pk}/demographics/").json()["response"]["answers"] == {
        "age_band": "25-34"}


def test_external_ids_follow_one_rule_everywhere(small: Campaign, researcher: User) -> None:  # noqa: F811
    api = APIClient()
    for field in ("mturk_worker_id", "prolific_pid"):
        response = api.post("/api/annotators/", {"username": f"u{field}", "password": PASSWORD, "consent": True,
                                                 field: "<script>x"}, format="json")
        assert response.status_code == 400 and field in response.json()["errors"], response.json()
    _, client = make_annotator("linker")
    patch = client.patch("/api/annotators/me/", {"mturk_worker_id": "bad id!", "password": "linker-Secret-pass-9"},
                         format="json")
    assert patch.status_code == 400 and "mturk_worker_id" in patch.json()["errors"]
    # The MTurk batch import refuses the id the links refuse, naming the row; nothing is written.
    data = batch_csv([["H1", "<script>x", "X1", "Submitted", "20", "in boots", W, M, "false", "true", "true", "false"]])
    with pytest.raises(BatchImportError) as info:
        mturk_batch_import(campaigns=[small], data=data, mapping=MAPPING)
    assert any("WorkerId" in m for m in info.value.errors["row 2"])
    assert not Annotator.objects.filter(mturk_worker_id="<script>x").exists()
    upload = APIClient()
    upload.force_authenticate(researcher)
    from django.core.files.uploadedfile import SimpleUploadedFile

    reply = upload.post(f"/api/campaigns/{small.pk}/mturk/import/",
                        {"file": SimpleUploadedFile("b.csv", data), "mapping": '{"slots": 2}'}, format="multipart")
    assert reply.status_code == 400 and not Annotator.objects.filter(mturk_worker_id="<script>x").exists()
    page = crowd_campaign(researcher)
    assert Client().get(f"/mturk/{page.pk}/", accept_params(worker="<script>x")).status_code == 400


def test_a_claimed_id_never_blocks_the_platforms_own_flow(small: Campaign, researcher: User) -> None:  # noqa: F811
    campaign = crowd_campaign(researcher)
    # A stranger signs up claiming a worker's id, and takes the username the import would use.
    squatter, _ = annotator_create(username="mturk-AREAL1", password=PASSWORD, consent=True,
                                   mturk_worker_id="AREAL1", prolific_pid="PREAL1")
    page = Client().get(f"/mturk/{campaign.pk}/", accept_params(worker="AREAL1"))
    assert page.status_code == 200 and 'data-auth-token="s1.' in page.content.decode()
    link = Annotator.objects.get(kind=Annotator.Kind.MTURK, mturk_worker_id="AREAL1")
    assert link.pk != squatter.pk
    prolific = Client().get(f"/prolific/{campaign.pk}/?PROLIFIC_PID=PREAL1&STUDY_ID=s1&SESSION_ID=x1")
    assert prolific.status_code == 200
    # The batch import files the worker's answers under the link account, never the squatter's.
    data = batch_csv([["H1", "AREAL2", "X1", "Submitted", "20", "in boots", W, M, "false", "true", "true", "false"]])
    annotator_create(username="mturk-AREAL2", password=PASSWORD, consent=True, mturk_worker_id="AREAL2")
    mturk_batch_import(campaigns=[small], data=data, mapping=MAPPING)
    imported = Annotator.objects.get(kind=Annotator.Kind.MTURK, mturk_worker_id="AREAL2")
    assert imported.user.username.startswith("mturk-AREAL2-") and imported.answers.count() == 2
    assert not Annotator.objects.get(kind=Annotator.Kind.PASSWORD, mturk_worker_id="AREAL2").answers.exists()


def test_a_made_up_prolific_id_on_a_closed_campaign_gets_no_completion_code(researcher: User) -> None:
    campaign = crowd_campaign(researcher, prolific={"completion_code": "PAYME1"})
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    browser = Client()
    url = f"/prolific/{campaign.pk}/?PROLIFIC_PID=PMADEUP1&STUDY_ID=s1&SESSION_ID=x1"
    assert browser.get(url).status_code == 200
    assert browser.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True},
                        content_type="application/json").status_code == 200
    for reply in (browser.get(url), browser.get(f"/prolific/{campaign.pk}/finish/")):
        assert reply.status_code == 200 and "PAYME1" not in reply.content.decode()
        assert "no completion code" in reply.content.decode() and "Location" not in reply


def test_profile_demographics_are_documented_fields_counted_nowhere(researcher: User, api: APIClient) -> None:
    asking = open_campaign(_make(researcher, ask=True))
    silent = open_campaign(_make(researcher, ask=False))
    clients = []
    for i in range(6):
        _, client = make_annotator(f"prof{i}", campaign=asking)
        client.post(f"/api/campaigns/{silent.pk}/consent/", {"consent": True}, format="json")
        ok = client.patch("/api/annotators/me/", {"demographics": {"gender": "woman", "age_band": "18-24"}},
                          format="json")
        assert ok.status_code == 200
        clients.append(client)
    religion = clients[0].patch("/api/annotators/me/", {"demographics": {"gender": "man", "religion": "x"}},
                                format="json")
    assert religion.status_code == 400 and "demographics.religion" in religion.json()["errors"]
    assert "religion" not in Annotator.objects.get(user__username="prof0").demographics
    for campaign in (asking, silent):
        api.post(f"/api/campaigns/{campaign.pk}/close/")
        summary = api.get(f"/api/campaigns/{campaign.pk}/demographics/").json()
        # Counted neither where nobody asked nor where the campaign's own consent was not given.
        assert summary["reported"] == 0 and "woman" not in str(summary["groups"])


def _make(researcher: User, *, ask: bool) -> Campaign:
    demographics = {"ask": ask, "fields": ["gender", "age_band", "country"]}
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2, "demographics": demographics})
    make_images(campaign, "explicit", 4)
    return campaign
