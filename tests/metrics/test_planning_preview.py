"""Sample-size planning in the spec preview: `POST /api/specs/preview/` returns `planning` (expected
95% half-widths of the headline scores for the planned images and R, under the papers' agreement
levels, and the images needed for `?target_half_width=`), equal to `metrics.core.planning`."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from campaigns.models import Campaign
from metrics.core.planning import gep_plan, pst_plan

pytestmark = pytest.mark.django_db
PST = {"name": "plan-pst", "kind": "pst", "seed": 1, "design": {"aspect": "occupation", "settings": ["single", "paired"]},
       "backend": {"name": "placeholder"}, "annotation": {"redundancy": 5}}
GEP = {"name": "plan-gep", "kind": "gep", "seed": 1, "design": {"settings": ["neutral", "explicit"]},
       "backend": {"name": "placeholder"}}


def test_pst_preview_has_the_planned_half_widths(api: APIClient) -> None:
    body = api.post("/api/specs/preview/?target_half_width=3", PST, format="json").json()
    plan = body["planning"]
    assert plan["assumption"]["kappa"] == 0.90 and plan["assumption"]["redundancy"] == 5
    assert plan["target_half_width"] == 3.0 and plan["gep"] is None
    paired = plan["pst"]["by_setting"]["paired"]
    ref = pst_plan(800, redundancy=5, persons_per_image=2, sts=40.0, kappa=0.90, icc=0.1, target_half_width=3.0)
    assert paired["images"] == 800 and paired["half_width"] == pytest.approx(ref["half_width"])
    assert plan["pst"]["headline_setting"] == "paired" and plan["pst"]["half_width"] == paired["half_width"]
    single = plan["pst"]["by_setting"]["single"]
    assert single["half_width"] > paired["half_width"]  # 120 single images of one person vs 800 of two
    assert plan["images_for_target"] == {"single": single["images_needed"], "paired": ref["images_needed"]}
    # Reaching the target: the images needed give (about) the target half-width.
    again = pst_plan(plan["images_for_target"]["paired"], redundancy=5, persons_per_image=2, kappa=0.90, icc=0.1)
    assert again["half_width"] <= 3.0 < pst_plan(plan["images_for_target"]["paired"] - 5, redundancy=5,
                                                   persons_per_image=2, kappa=0.90, icc=0.1)["half_width"]
    assert Campaign.objects.count() == 0  # a preview creates nothing
    # Issue 22: the occupation preset's 3 single images per identity allow neither the per-identity gap
    # interval nor a test of amplification, and the preview says how many they need.
    assert plan["validity"] == {"single_images_per_identity_and_template": 3,
                                "gap_interval_per_identity": {"needs": 10, "computed": False},
                                "amplification_test": {"needs": 20, "computed": False}}
    more = {**PST, "design": {**PST["design"], "samples": {"single": 20, "paired": 1}}}
    assert api.post("/api/specs/preview/", more, format="json").json()["planning"]["validity"][
        "amplification_test"]["computed"] is True


def test_gep_preview_and_no_target(api: APIClient) -> None:
    plan = api.post("/api/specs/preview/", GEP, format="json").json()["planning"]
    assert plan["assumption"]["alpha"] == 0.81 and plan["images_for_target"] is None and plan["pst"] is None
    neutral = plan["gep"]["by_setting"]["neutral"]
    ref = gep_plan(160, 0.10, 0.06, n_attributes=15, setting="neutral", redundancy=3, alpha=0.81)
    assert neutral["half_width"] == pytest.approx(ref["half_width"]) and neutral["images_per_cell"] == 80
    assert plan["gep"]["headline_setting"] == "neutral" and "near_zero" in neutral
    assert plan["gep"]["by_setting"]["explicit"]["images"] == 2400


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf"])
def test_a_bad_target_is_a_400_naming_it(api: APIClient, value: str) -> None:
    r = api.post(f"/api/specs/preview/?target_half_width={value}", PST, format="json")
    assert r.status_code == 400 and "target_half_width" in r.json()["errors"]


def test_adaptive_redundancy_preview_models_answers_per_question(api: APIClient) -> None:
    adaptive = {**PST, "name": "plan-adaptive", "annotation": {"redundancy": {"min": 2, "max": 5}}}
    r = api.post("/api/specs/preview/?detect_difference=8", adaptive, format="json")
    assert r.status_code == 200, r.content  # issue 22 defect 12: int() on the redundancy object crashed
    plan = r.json()["planning"]
    assert plan["assumption"]["redundancy"]["min"] == 2 and plan["adaptive"]["threshold"] == 0.75
    paired = plan["pst"]["by_setting"]["paired"]
    per_q = plan["adaptive"]["by_setting"]["paired"]["answers_per_question"]
    assert 2.0 < per_q < 3.0 and paired["answers_per_question"] == pytest.approx(per_q, rel=1e-3)
    assert paired["half_width"] is not None and paired["answers"] < 800 * 2 * 3
    cmp_ = plan["comparison"]
    assert cmp_["difference"] == 8.0 and cmp_["power"] == 0.8
    assert cmp_["images_per_side"]["single"] > cmp_["images_per_side"]["paired"] > 0
    fixed = api.post("/api/specs/preview/", PST, format="json").json()["planning"]
    assert fixed["adaptive"] is None and fixed["comparison"]["difference"] == 10.0
    assert fixed["pst"]["by_setting"]["paired"]["answers_per_question"] == 5.0
