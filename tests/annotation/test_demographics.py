"""Self-reported demographics: the spec's settings, the annotator's consented form, what researchers
see (aggregates unless the spec says individual), the profile's PATCH under the same rules, and the
withdrawal that erases them while the task answers stay."""
from __future__ import annotations

import pytest

from annotation.hits import answers_submit, assignment_next
from annotation.models import Annotator, Answer, DemographicsResponse
from campaigns.services import campaign_create
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from tests.conftest import GEP_MINIMAL, token_client

pytestmark = pytest.mark.django_db

ASK = {"ask": True, "fields": ["gender", "age_band", "country"], "consent_version": "2"}


def _campaign(researcher, demographics=ASK):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2,
                                                                            "demographics": demographics})
    make_images(campaign, "explicit", 4)
    return open_campaign(campaign)


def test_spec_defaults_the_old_boolean_and_errors_naming_the_field(researcher, api):
    campaign = make_campaign(researcher, settings=["explicit"])
    section = campaign.spec["annotation"]
    assert section["demographics"]["ask"] is False and section["demographics"]["researcher_access"] == "aggregate"
    assert section["demographics"]["fields"] == ["gender", "age_band", "country"]
    assert section["pay_floor_usd_per_hour"] == 12.0
    old = make_campaign(researcher, settings=["explicit"], annotation={"demographics": True})
    assert old.spec["annotation"]["demographics"]["ask"] is True
    for bad, field in (({"ask": "yes"}, "annotation.demographics.ask"),
                       ({"fields": ["gender", "income"]}, "annotation.demographics.fields"),
                       ({"researcher_access": "everyone"}, "annotation.demographics.researcher_access"),
                       ({"consent_version": ""}, "annotation.demographics.consent_version"),
                       ({"colour": 1}, "annotation.demographics.colour")):
        spec = {**GEP_MINIMAL, "annotation": {"demographics": bad}}
        response = api.post("/api/campaigns/", spec, format="json")
        assert response.status_code == 400 and field in response.json()["errors"], (bad, response.json())
    response = api.post("/api/campaigns/", {**GEP_MINIMAL, "annotation": {"pay_floor_usd_per_hour": -1}},
                        format="json")
    assert response.status_code == 400 and "annotation.pay_floor_usd_per_hour" in response.json()["errors"]


def test_annotator_form_consent_and_validation(researcher):
    campaign = _campaign(researcher)
    annotator, client = make_annotator("dana")
    url = f"/api/campaigns/{campaign.pk}/demographics/"
    form = client.get(url).json()
    assert form["ask"] is True and form["consent_version"] == "2" and form["response"] is None
    assert ["prefer_not_to_say", "Prefer not to say"] in form["choices"]["gender"]
    assert ["NZ", "New Zealand"] in form["choices"]["country"]
    body = {"consent": True, "consent_version": "2", "answers": {"gender": "woman", "age_band": "25-34"}}
    # Not enrolled in the campaign yet: 403, nothing stored.
    assert client.post(url, body, format="json").status_code == 403
    client.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json")
    for bad, field in (({**body, "consent": False}, "consent"),
                       ({**body, "consent_version": "1"}, "consent_version"),
                       ({**body, "answers": {"gender": "robot"}}, "answers.gender"),
                       ({**body, "answers": {"age_band": "12-17"}}, "answers.age_band"),
                       ({**body, "answers": {"country": "XX"}}, "answers.country"),
                       ({**body, "answers": {"gender": "self_describe"}}, "answers.gender_self_described"),
                       ({**body, "answers": {}}, "answers"),
                       ({**body, "extra": 1}, "extra")):
        response = client.post(url, bad, format="json")
        assert response.status_code == 400 and field in response.json()["errors"], (bad, response.json())
    assert not DemographicsResponse.objects.exists()
    ok = client.post(url, {**body, "answers": {"gender": "self_describe", "gender_self_described": " genderfluid ",
                                               "country": "nz"}}, format="json")
    assert ok.status_code == 200, ok.json()
    row = DemographicsResponse.objects.get(annotator=annotator, campaign=campaign)
    assert row.answers == {"gender": "self_describe", "gender_self_described": "genderfluid", "country": "NZ"}
    assert row.consent_version == "2" and row.consented_at is not None
    assert client.get(url).json()["response"]["answers"]["country"] == "NZ"


def test_campaign_that_does_not_ask_refuses(researcher):
    campaign = _campaign(researcher, demographics=False)
    _, client = make_annotator("noel", campaign=campaign)
    response = client.post(f"/api/campaigns/{campaign.pk}/demographics/",
                           {"consent": True, "consent_version": "1", "answers": {"gender": "man"}}, format="json")
    assert response.status_code == 409 and "demographics" in response.json()["errors"]


def _answer(client, campaign, annotator, gender):
    client.post(f"/api/campaigns/{campaign.pk}/demographics/",
                {"consent": True, "consent_version": "2", "answers": {"gender": gender}}, format="json")


def test_researchers_see_aggregates_with_small_groups_merged(researcher, api):
    campaign = _campaign(researcher)
    for i in range(6):
        a, c = make_annotator(f"w{i}", campaign=campaign)
        _answer(c, campaign, a, "woman")
    for i in range(5):
        a, c = make_annotator(f"m{i}", campaign=campaign)
        _answer(c, campaign, a, "man")
    a, c = make_annotator("nb0", campaign=campaign)
    _answer(c, campaign, a, "non_binary")
    make_annotator("quiet", campaign=campaign)
    url = f"/api/campaigns/{campaign.pk}/demographics/"
    before = api.get(url).json()
    assert before["release"] is None and before["groups"] == {} and before["next_release"]["new_annotators"] == 13
    assert api.post(url + "releases/").status_code == 201
    summary = api.get(url).json()
    # non_binary (1) and not reported (1) are under 5: merged into "other" (2), still under 5, so the
    # smallest other group (man, 5) joins it: no cell under 5, none that follows from the total.
    assert summary["groups"]["gender"] == {"woman": 6, "other": 7} and summary["release"]["number"] == 1
    assert summary["annotators"] == 13 and summary["reported"] == 12
    assert "individual" not in summary
    assert api.get(url + "?min_group=7").json()["groups"]["gender"] == {"other": 13}
    for bad_value in ("zero", "2", "4"):  # never below the campaign's min_group (5)
        bad = api.get(f"{url}?min_group={bad_value}")
        assert bad.status_code == 400 and "min_group" in bad.json()["errors"]


def test_individual_access_only_when_the_spec_says_so(researcher, api, other_researcher):
    campaign = _campaign(researcher, demographics={**ASK, "researcher_access": "individual"})
    assert "pseudonymous annotator id" in campaign.spec["annotation"]["demographics"]["consent_text"]
    ann, client = make_annotator("ivy", campaign=campaign)
    _answer(client, campaign, ann, "woman")
    profile_only, pclient = make_annotator("pat", campaign=campaign)
    pclient.patch("/api/annotators/me/", {"demographics": {"gender": "man"}}, format="json")
    summary = api.get(f"/api/campaigns/{campaign.pk}/demographics/").json()
    # The profile's answers are never shown individually (nor counted: the campaign's form only).
    assert summary["individual"] == [{"annotator": ann.pk, "answers": {"gender": "woman"}, "consent_version": "2"}]
    assert token_client(other_researcher).get(f"/api/campaigns/{campaign.pk}/demographics/").status_code == 404


def test_profile_patch_follows_the_same_rules():
    annotator, client = make_annotator("paco")
    ok = client.patch("/api/annotators/me/", {"demographics": {"age_band": "25-34", "gender": "man"}}, format="json")
    assert ok.status_code == 200 and ok.json()["demographics"] == {"age_band": "25-34", "gender": "man"}
    annotator.refresh_from_db()
    assert annotator.demographics_consented_at is not None
    bad = client.patch("/api/annotators/me/", {"demographics": {"gender": "robot"}}, format="json")
    assert bad.status_code == 400 and "demographics.gender" in bad.json()["errors"]
    cleared = client.patch("/api/annotators/me/", {"demographics": {}}, format="json")
    assert cleared.status_code == 200
    annotator.refresh_from_db()
    assert annotator.demographics == {} and annotator.demographics_consented_at is None
    assert annotator.demographics_withdrawn_at is not None


@pytest.mark.parametrize("how", ["post", "delete"])
def test_withdraw_erases_demographics_and_keeps_answers(researcher, how):
    campaign = _campaign(researcher)
    annotator, client = make_annotator("wil", campaign=campaign)
    _answer(client, campaign, annotator, "woman")
    client.patch("/api/annotators/me/", {"demographics": {"country": "NZ"}}, format="json")
    hit, _ = assignment_next(annotator=annotator, campaign_id=campaign.pk)
    answers_submit(annotator=annotator, assignment_id=hit["id"],
                   answers=[{"question": q["id"], "choice": "Yes", "time_ms": 900} for q in hit["questions"]])
    response = (client.post("/api/annotators/me/demographics/withdraw/") if how == "post"
                else client.delete("/api/annotators/me/demographics/"))
    assert response.status_code == 200 and response.json()["erased"] == 2 and response.json()["campaigns"] == 1
    row = DemographicsResponse.objects.get(annotator=annotator)
    assert row.answers == {} and row.withdrawn_at is not None
    annotator = Annotator.objects.get(pk=annotator.pk)
    assert annotator.demographics == {} and annotator.demographics_withdrawn_at == row.withdrawn_at
    assert Answer.objects.filter(annotator=annotator).count() == 2  # the task answers stay
    assert client.get("/api/annotators/me/").json()["demographics"] == {}
    # Answering again after a withdrawal is a new consent.
    _answer(client, campaign, annotator, "man")
    assert DemographicsResponse.objects.get(annotator=annotator).answers == {"gender": "man"}


def test_database_refuses_answers_without_consent(researcher):
    from django.db import IntegrityError, transaction

    campaign = _campaign(researcher)
    annotator, _ = make_annotator("raw", campaign=campaign)
    with pytest.raises(IntegrityError), transaction.atomic():
        DemographicsResponse.objects.create(annotator=annotator, campaign=campaign, answers={"gender": "man"})


def test_spec_preview_accepts_individual_access(researcher):
    spec = {**GEP_MINIMAL, "annotation": {"demographics": {"ask": True, "researcher_access": "individual"}}}
    campaign = campaign_create(owner=researcher, spec=spec)
    assert campaign.spec["annotation"]["demographics"]["researcher_access"] == "individual"
