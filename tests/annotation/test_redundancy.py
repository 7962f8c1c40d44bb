"""Adaptive redundancy (issue 17): the settling rule (annotation/redundancy.py), the spec setting
(an integer R or the object, 400 naming `annotation.redundancy.<field>`), and the engine growing a
question's `required` at submit and handing out questions already started first; both engines."""
from __future__ import annotations

import random

import pytest
from scipy import stats

from annotation import redundancy
from annotation.hits import answers_submit, assignment_next
from annotation.models import AggregatedLabel, Question
from campaigns.spec import Problems
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from tests.conftest import GEP_MINIMAL

ADAPTIVE = {"min": 2, "max": 4, "rule": "confidence", "threshold": 0.75}


def test_posterior_matches_the_beta_marginal_for_two_choices():
    # Two choices: Dirichlet(a, b) is Beta(a, b); P(share of the majority > 1/2) in closed form.
    for yes, no, prior in ((2, 0, 1.0), (3, 1, 1.0), (4, 1, 0.5), (7, 3, 2.0)):
        exact = stats.beta.sf(0.5, yes + prior, no + prior)
        assert redundancy.majority_posterior({"Yes": yes, "No": no}, 2, prior=prior) == pytest.approx(exact, abs=1e-7)
    # Three choices: by symmetry the three "largest" probabilities of 1-1-1 are each 1/3.
    assert redundancy.majority_posterior({"a": 1, "b": 1, "c": 1}, 3) == pytest.approx(1 / 3, abs=1e-7)
    assert redundancy.majority_posterior({"a": 2}, 3) > redundancy.majority_posterior({"a": 2, "b": 1}, 3)


def test_settling_rule():
    cfg = redundancy.validate_redundancy(ADAPTIVE, Problems())
    assert cfg == {**ADAPTIVE, "prior": 1.0}
    assert not redundancy.settled({"Yes": 1}, 2, cfg)  # under min
    assert redundancy.settled({"Yes": 2}, 2, cfg) and redundancy.settled({"F": 2}, 3, cfg)
    assert not redundancy.settled({"Yes": 1, "No": 1}, 2, cfg)  # a tie always gets more
    assert not redundancy.settled({"a": 1, "b": 1, "c": 1}, 3, {**cfg, "max": 5})  # 1-1-1 too
    assert not redundancy.settled({"Yes": 2, "No": 1}, 2, cfg)
    assert redundancy.settled({"Yes": 2, "No": 2}, 2, cfg)  # max reached: stop, whatever the split
    assert redundancy.required_next(required=2, completed=2, counts={"Yes": 1, "No": 1}, choices=2, cfg=cfg) == 3
    assert redundancy.required_next(required=2, completed=1, counts={"Yes": 1}, choices=2, cfg=cfg) == 2  # in flight
    assert redundancy.required_next(required=4, completed=4, counts={"Yes": 2, "No": 2}, choices=2, cfg=cfg) == 4
    assert redundancy.required_next(required=2, completed=2, counts={"Yes": 2}, choices=2, cfg=cfg) == 2


def test_spec_accepts_an_integer_or_the_object_and_names_bad_fields(api):
    for value, status in ((3, 201), (ADAPTIVE, 201), ({"max": 6}, 201)):
        response = api.post("/api/campaigns/", {**GEP_MINIMAL, "annotation": {"redundancy": value}}, format="json")
        assert response.status_code == status, response.content
    stored = response.json()["spec"]["annotation"]["redundancy"]
    assert stored == {**redundancy.DEFAULT_ADAPTIVE, "max": 6}
    bad = api.post("/api/campaigns/", {**GEP_MINIMAL, "annotation": {"redundancy": {
        "min": 0, "max": "five", "rule": "bayes", "threshold": 1.5, "prior": -1, "extra": 1}}}, format="json")
    assert bad.status_code == 400
    assert {f"annotation.redundancy.{k}" for k in ("min", "max", "rule", "threshold", "prior", "extra")} <= set(
        bad.json()["errors"]), bad.json()
    upside_down = api.post("/api/campaigns/", {**GEP_MINIMAL, "annotation": {"redundancy": {"min": 4, "max": 2}}},
                           format="json")
    assert upside_down.status_code == 400 and "annotation.redundancy.max" in upside_down.json()["errors"]
    assert api.post("/api/campaigns/", {**GEP_MINIMAL, "annotation": {"redundancy": "3"}},
                    format="json").json()["errors"].keys() == {"annotation.redundancy"}


def _submit(annotator, hit, choose):
    return answers_submit(annotator=annotator, assignment_id=hit["id"], answers=[
        {"question": q["id"], "choice": choose(q), "time_ms": 1500} for q in hit["questions"]])


@pytest.mark.django_db
def test_disagreement_grows_required_and_open_questions_come_first(researcher, hit_engine):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 1, "redundancy": ADAPTIVE})
    make_images(campaign, "explicit", 3)
    campaign = open_campaign(campaign)
    assert set(Question.objects.filter(campaign=campaign).values_list("required", flat=True)) == {2}
    amy, bob, cid, dee = (make_annotator(n, campaign=campaign)[0] for n in ("amy", "bob", "cid", "dee"))
    h1, _ = assignment_next(annotator=amy, campaign_id=campaign.pk, rng=random.Random(1))
    h2, _ = assignment_next(annotator=bob, campaign_id=campaign.pk, rng=random.Random(1))
    first = h1["questions"][0]["id"]
    assert h2["questions"][0]["id"] == first
    _submit(amy, h1, lambda q: "Yes")
    assert Question.objects.get(pk=first).required == 2  # bob's answer is in flight
    _submit(bob, h2, lambda q: "No")
    assert Question.objects.get(pk=first).required == 3  # 1-1: one more
    # "Finish what is open": the question already started comes before the fresh ones.
    h3, _ = assignment_next(annotator=cid, campaign_id=campaign.pk, rng=random.Random(1))
    assert h3["questions"][0]["id"] == first
    _submit(cid, h3, lambda q: "Yes")
    q = Question.objects.get(pk=first)
    assert (q.required, q.assigned, q.completed) == (4, 3, 3)  # 2-1 is not settled at 0.75
    h4, _ = assignment_next(annotator=dee, campaign_id=campaign.pk, rng=random.Random(1))
    assert h4["questions"][0]["id"] == first
    _submit(dee, h4, lambda q: "Yes")
    q = Question.objects.get(pk=first)
    assert (q.required, q.assigned, q.completed) == (4, 4, 4)  # max reached
    assert AggregatedLabel.objects.get(question=q).votes == {"Yes": 3, "No": 1}
    # Unanimous pairs stop at min.
    for who in (amy, bob):
        hit, _ = assignment_next(annotator=who, campaign_id=campaign.pk)
        _submit(who, hit, lambda q: "No")
    second = Question.objects.get(pk=hit["questions"][0]["id"])
    assert (second.required, second.completed) == (2, 2)
