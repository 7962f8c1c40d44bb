"""Property tests, part 2 (issue 22, "a report for every state of a campaign"): the designs the first
module (test_report_properties.py) leaves out: the PST power aspect, adaptive redundancy, gold
questions, machine labels (a machine source and the hybrid one, with a failed label and a human
sample), annotators of three genders with a demographics release. For every drawn state the report
(JSON, HTML, CSV, and `?source=` for machine labels), a comparison and the replication package (built,
and its report recomputed) succeed, with every interval holding its estimate. Small `max_examples`
and `n_boot`. An explicit PST power-aspect example holds the gap interval over every identity of
either setting (over the shared ones only it was [0, 0] around a gap of -100)."""
from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotation.demographics import default_section
from annotation.models import Answer, DemographicsResponse, Enrollment, Question
from annotation.services.demographics import demographics_release_cut
from autolabel.models import HumanSampleImage, MachineLabelFailure
from generation.models import Image
from metrics.package import report_from_package
from tests.builders.intervals import interval_violations
from tests.builders.machine import machine_labels
from tests.builders.metrics import SMALL_GEP, annotators, campaign_with_questions
from tests.builders.package import package_bytes
from tests.builders.properties import SETTINGS, _names, answer, answer_sets, check_report, pst_spec

pytestmark = pytest.mark.django_db
GENDERS = ["woman", "man", "non_binary"]


designs = st.one_of(
    st.builds(pst_spec, st.sampled_from([["single", "paired"]]), st.sampled_from([False, ["pilot", "nurse"]]),
              st.just(False)),
    st.builds(lambda: {**copy.deepcopy(SMALL_GEP), "name": f"prop-gep-{next(_names)}"}),
)
extras = st.fixed_dictionaries({
    "adaptive": st.booleans(),
    "gold": st.booleans(),
    "machine": st.sampled_from([None, 0.0, 0.3]),  # no machine labels, or labels flipped with this rate
    "genders": st.booleans(),  # 15 more annotators, 5 of each of three genders, and a demographics release
})


def _build(owner: User, spec: dict[str, Any], plan: dict[str, Any], extra: dict[str, Any]) -> Any:
    if extra["adaptive"]:
        spec = {**spec, "annotation": {"redundancy": {"min": 2, "max": 4, "threshold": 0.75}}}
    campaign, questions = campaign_with_questions(owner, spec)
    if extra["gold"]:
        for q in questions[:2]:
            Question.objects.filter(pk=q.pk).update(is_gold=True, gold_answer=q.choices[0])
    answer(questions, plan)
    rng = random.Random(plan["seed"])
    if extra["genders"]:
        campaign.spec["annotation"]["demographics"] = default_section(ask=True)
        campaign.save(update_fields=["spec"])
        now = timezone.now()
        people = annotators(15, f"g{campaign.pk}-")
        rows = []
        for i, a in enumerate(people):
            Enrollment.objects.create(campaign=campaign, annotator=a, consented_at=now)
            DemographicsResponse.objects.create(annotator=a, campaign=campaign, consent_version="1", consented_at=now,
                                                answers={"gender": GENDERS[i % 3], "country": "NZ"})
            rows += [Answer(campaign=campaign, question=q, annotator=a, choice=rng.choice(q.choices), time_ms=800)
                     for q in questions if rng.random() < plan["share"]]
        Answer.objects.bulk_create(rows)
        demographics_release_cut(campaign=campaign, reason="request")
    if extra["machine"] is not None:
        labeller = "clip_gender" if campaign.kind == "pst" else "clip_cls"
        machine_labels(campaign, labeller, lambda q: q.choices[0], flip=extra["machine"], seed=plan["seed"])
        images = list(Image.objects.filter(campaign=campaign).order_by("id").values_list("id", flat=True))
        HumanSampleImage.objects.bulk_create([HumanSampleImage(campaign=campaign, image_id=i, stratum="s")
                                              for i in images[::2]])
        failed = campaign.questions.filter(is_gold=False).order_by("-id").first()
        campaign.machine_labels.filter(question=failed, labeller=labeller).delete()
        MachineLabelFailure.objects.create(campaign=campaign, question=failed, labeller=labeller, error="unreadable")
    return campaign


@settings(SETTINGS, max_examples=6, phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking: slow
@given(spec=designs, plan=answer_sets, extra=extras)
@example(spec=pst_spec(["single", "paired"], ["pilot", "nurse"], False),
         plan={"share": 0.5, "annotators": 2, "mode": "random", "seed": 5},
         extra={"adaptive": True, "gold": True, "machine": 0.3, "genders": True})
@example(spec={"name": "prop-power", "kind": "pst", "seed": 3, "backend": {"name": "placeholder"},
               "design": {"aspect": "power", "power": {"occupations": ["pilot", "nurse"]},
                          "samples": {"single": 1, "paired": 1}}},
         plan={"share": 1.0, "annotators": 3, "mode": "stereotyped", "seed": 5},
         extra={"adaptive": True, "gold": True, "machine": 0.3, "genders": False})
@example(spec={**copy.deepcopy(SMALL_GEP), "name": "prop-gep-explicit"},
         plan={"share": 1.0, "annotators": 3, "mode": "random", "seed": 6},
         extra={"adaptive": True, "gold": False, "machine": 0.0, "genders": True})
def test_every_design_and_state_reports_compares_and_packages(researcher: User, api: APIClient, spec: dict[str, Any],
                                                             plan: dict[str, Any], extra: dict[str, Any]) -> None:
    campaign = _build(researcher, spec, plan, extra)
    report = check_report(api, campaign.pk)
    if extra["genders"]:
        assert report["annotators"]["release"] is not None
    if extra["machine"] is not None:
        labeller = "clip_gender" if campaign.kind == "pst" else "clip_cls"
        for source in (labeller, f"hybrid:{labeller}"):
            resp = api.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=20&n_perm=20&source={source}")
            assert resp.status_code == 200, (source, resp.content[:400])
            assert interval_violations(resp.json()) == [], source
    other = _build(researcher, {**spec, "name": f"{spec['name']}-b{next(_names)}"}, {**plan, "seed": plan["seed"] + 1},
                   extra)
    resp = api.get(f"/api/reports/compare/?campaigns={campaign.pk},{other.pk}&n_boot=20&n_perm=20")
    assert resp.status_code in (200, 202), resp.content[:400]
    if resp.status_code == 200:
        assert [v for v in interval_violations(resp.json()) if "outside" in v] == []
    packaged = report_from_package(package_bytes(api, campaign.pk), n_boot=20, n_perm=20)
    assert packaged["counts"]["questions"] == report["counts"]["questions"]
    assert interval_violations(packaged) == []
