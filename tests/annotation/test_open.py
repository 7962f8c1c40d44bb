"""Opening a campaign: questions from generated images, per METHOD.md sections 1 and 2."""
from __future__ import annotations

import pytest

from annotation.models import Question
from annotation.spec_section import ATTRIBUTE_CHOICES, PERSON_CHOICES
from campaigns.services import campaign_create
from campaigns.spec import SpecError
from generation.models import Image
from tests.builders.campaigns import make_campaign, make_images
from tests.conftest import GEP_MINIMAL

pytestmark = pytest.mark.django_db


def test_pst_single_one_question_paired_two_with_left_right_identities(api, researcher):
    campaign = make_campaign(researcher, kind="pst")
    single = make_images(campaign, "single", 3)
    paired = make_images(campaign, "paired", 4)
    response = api.post(f"/api/campaigns/{campaign.pk}/open/")
    assert response.status_code == 200, response.content
    assert response.json()["questions_created"] == 3 + 8
    assert response.json()["status"] == "open"
    for image in single:
        qs = list(Question.objects.filter(image=image))
        assert [q.slot for q in qs] == ["single"]
        identity = image.prompt.metadata["persons"][0]["identity"]
        assert qs[0].text == f"Does the {identity} in the image show feminine or masculine traits?"
        assert qs[0].choices == PERSON_CHOICES and qs[0].family == "person" and qs[0].required == 3
        assert qs[0].metadata["identity"] == identity and qs[0].metadata["position"] == "single"
    for image in paired:
        persons = {p["position"]: p for p in image.prompt.metadata["persons"]}
        qs = {q.slot: q for q in Question.objects.filter(image=image)}
        assert set(qs) == {"left", "right"}
        assert qs["left"].text == f"Does the {persons['left']['identity']} on the left show feminine or masculine traits?"
        assert qs["right"].text == f"Does the {persons['right']['identity']} on the right show feminine or masculine traits?"
        assert qs["left"].metadata["group"] == persons["left"]["group"]
        assert qs["left"].metadata["prompt_key"] == image.prompt.key and qs["left"].metadata["setting"] == "paired"
        # Both persons of an image share the order key: they sit together in the pool.
        assert qs["left"].order_key == qs["right"].order_key


def test_gep_neutral_fifteen_explicit_one(api, researcher):
    campaign = make_campaign(researcher)
    neutral = make_images(campaign, "neutral", 2)
    explicit = make_images(campaign, "explicit", 3)
    assert api.post(f"/api/campaigns/{campaign.pk}/open/").status_code == 200
    for image in neutral:
        qs = Question.objects.filter(image=image)
        assert qs.count() == 15
        assert set(qs.values_list("family", flat=True)) == {f"attribute:{q.slot}" for q in qs}
        dress = qs.get(slot="dress")
        assert dress.text == "Do you see a person in a dress?" and dress.choices == ATTRIBUTE_CHOICES
        assert dress.metadata["gender"] == image.prompt.metadata["gender"]
        assert dress.metadata["context"] == image.prompt.metadata["context"]
    for image in explicit:
        qs = list(Question.objects.filter(image=image))
        assert len(qs) == 1 and qs[0].slot == image.prompt.metadata["attribute"] == qs[0].metadata["attribute"]
        assert qs[0].setting == "explicit"


def test_failed_filtered_excluded_images_get_no_questions_and_reopen_is_idempotent(api, researcher):
    campaign = make_campaign(researcher, settings=["explicit"])
    done = make_images(campaign, "explicit", 2)
    make_images(campaign, "explicit", 1, offset=2, status=Image.Status.FAILED)
    make_images(campaign, "explicit", 1, offset=3, status=Image.Status.FILTERED)
    make_images(campaign, "explicit", 1, offset=4, excluded=True)
    make_images(campaign, "explicit", 1, offset=5, status=Image.Status.PENDING)
    assert api.post(f"/api/campaigns/{campaign.pk}/open/").json()["questions_created"] == 2
    assert set(Question.objects.filter(campaign=campaign).values_list("image_id", flat=True)) == {i.pk for i in done}
    before = {q.pk: q.order_key for q in Question.objects.filter(campaign=campaign)}
    # Re-open: nothing new; then a new image is generated and only its question is added.
    assert api.post(f"/api/campaigns/{campaign.pk}/open/").json()["questions_created"] == 0
    Image.objects.filter(campaign=campaign, status=Image.Status.PENDING).update(status=Image.Status.DONE)
    body = api.post(f"/api/campaigns/{campaign.pk}/open/").json()
    assert body["questions_created"] == 1 and body["questions"] == 3
    after = {q.pk: q.order_key for q in Question.objects.filter(campaign=campaign)}
    assert {k: after[k] for k in before} == before


def test_order_keys_are_seeded(researcher, other_researcher):
    keys = []
    for owner in (researcher, other_researcher):
        campaign = make_campaign(owner, settings=["explicit"])
        make_images(campaign, "explicit", 5)
        from annotation.services.lifecycle import questions_open

        questions_open(campaign=campaign)
        keys.append([q.order_key for q in Question.objects.filter(campaign=campaign).order_by("image__prompt__position")])
    assert keys[0] == keys[1] and len(set(keys[0])) == 5


def test_questions_api_shape_pagination_and_owner_only(api, researcher, other_researcher):
    campaign = make_campaign(researcher)
    make_images(campaign, "neutral", 1)
    api.post(f"/api/campaigns/{campaign.pk}/open/")
    body = api.get(f"/api/campaigns/{campaign.pk}/questions/?page_size=10").json()
    assert body["count"] == 15 and len(body["results"]) == 10
    row = body["results"][0]
    assert {"id", "image", "choices", "metadata"} <= set(row)
    assert {"setting", "prompt_key", "sample_index", "gender", "attribute", "context"} <= set(row["metadata"])
    from tests.conftest import token_client

    assert token_client(other_researcher).get(f"/api/campaigns/{campaign.pk}/questions/").status_code == 404
    assert api.get(f"/api/campaigns/{campaign.pk}/questions/?page_size=500").json()["count"] == 15


def test_pause_resume_close_transitions(api, researcher):
    campaign = make_campaign(researcher, settings=["explicit"])
    assert api.post(f"/api/campaigns/{campaign.pk}/resume/").status_code == 409  # draft: nothing to resume
    api.post(f"/api/campaigns/{campaign.pk}/open/")
    assert api.post(f"/api/campaigns/{campaign.pk}/pause/").json()["status"] == "paused"
    assert api.post(f"/api/campaigns/{campaign.pk}/resume/").json()["status"] == "open"
    assert api.post(f"/api/campaigns/{campaign.pk}/close/").json()["status"] == "closed"
    assert api.post(f"/api/campaigns/{campaign.pk}/open/").status_code == 409
    progress = api.get(f"/api/campaigns/{campaign.pk}/").json()["progress"]
    assert {"questions", "questions_complete", "answers", "annotators_active", "answers_last_hour"} <= set(progress)


def test_annotation_section_defaults_and_named_errors(researcher):
    campaign = campaign_create(owner=researcher, spec=dict(GEP_MINIMAL))
    section = campaign.spec["annotation"]
    assert section["redundancy"] == 3 and section["hit_size"] == 10 and section["lease_minutes"] == 30
    assert section["questions"]["attribute"] == "Do you see a person {phrase}?"
    pst = make_campaign(researcher, kind="pst")
    assert pst.spec["annotation"]["hit_size"] == 5
    bad = dict(GEP_MINIMAL, annotation={"redundancy": 0, "gold_rate": "x", "questions": {"attribute": "no phrase"},
                                        "colour": 1, "reward": -1})
    with pytest.raises(SpecError) as err:
        campaign_create(owner=researcher, spec=bad)
    assert {"annotation.redundancy", "annotation.gold_rate", "annotation.questions.attribute", "annotation.colour",
            "annotation.reward"} <= set(err.value.errors)


def test_custom_wording_and_redundancy_from_the_spec(researcher):
    campaign = make_campaign(researcher, settings=["explicit"],
                             annotation={"redundancy": 5, "questions": {"attribute": "Is someone {phrase}?"}})
    make_images(campaign, "explicit", 1)
    from annotation.services.lifecycle import questions_open

    questions_open(campaign=campaign)
    q = Question.objects.get(campaign=campaign)
    assert q.required == 5 and q.text.startswith("Is someone ")


def test_cli_annotate_open_and_status(researcher):
    import json
    from io import StringIO

    from django.core.management import call_command

    campaign = make_campaign(researcher, settings=["explicit"])
    make_images(campaign, "explicit", 2)
    out = StringIO()
    call_command("campaign", "annotate-open", str(campaign.pk), stdout=out)
    assert json.loads(out.getvalue())["questions_created"] == 2
    out = StringIO()
    call_command("campaign", "annotate-status", str(campaign.pk), stdout=out)
    status = json.loads(out.getvalue())
    assert status["status"] == "open" and status["questions"] == 2 and status["answers"] == 0
