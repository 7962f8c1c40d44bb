"""Issue 24, leftovers of "Numbers": the query parameters and body fields that were still parsed with
a bare int() / float() now go through common.numbers.number() (short text, finite, in the field's
range). Each case is an outside probe over HTTP: a 400 naming the parameter, never a 500 or an
overflow in the work it sets up."""
from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.builders.campaigns import make_campaign

pytestmark = pytest.mark.django_db
PST = {"name": "probe-pst", "kind": "pst", "seed": 1, "design": {"aspect": "occupation", "settings": ["single", "paired"]},
       "backend": {"name": "placeholder"}, "annotation": {"redundancy": 5}}


def _400(response: Any, field: str) -> None:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert field in response.json()["errors"], response.json()
    assert len(response.content) < 5_000


@pytest.mark.parametrize("name", ["target_half_width", "detect_difference"])
@pytest.mark.parametrize("value", ["1e-300", "0", "-1", "inf", "nan", "1e999999999999", "9" * 400])
def test_planning_parameters_are_bounded_numbers(api: APIClient, name: str, value: str) -> None:
    # 1e-300 squared the planned half-width into an overflow: an OverflowError, a 500.
    _400(api.post(f"/api/specs/preview/?{name}={value}", PST, format="json"), name)
    assert api.post(f"/api/specs/preview/?{name}=2.5", PST, format="json").status_code == 200


@pytest.mark.parametrize("query,field", [("n_boot=1e5", "n_boot"), ("n_perm=" + "9" * 5000, "n_perm"),
                                         ("seed=-1", "seed"), ("confidence=1e999", "confidence"),
                                         ("confidence=nan", "confidence"), ("min_group=1e400", "min_group")])
def test_report_options_are_parsed_by_number(api: APIClient, researcher: Any, query: str, field: str) -> None:
    campaign = make_campaign(researcher, settings=["explicit"])
    _400(api.get(f"/api/campaigns/{campaign.pk}/report/?{query}"), field)


@pytest.mark.parametrize("query,field", [("draws=1e9", "draws"), ("draws=" + "9" * 5000, "draws"),
                                         ("campaigns=1,99999999999999999999999", "campaigns"),
                                         ("campaigns=" + ",".join(["1"] * 51), "campaigns")])
def test_compare_parameters_are_bounded(api: APIClient, query: str, field: str) -> None:
    # A campaign id over PostgreSQL's bigint was a database error (500); any count of ids was read.
    _400(api.get(f"/api/reports/compare/?{query}"), field)


def test_demographics_min_group_is_a_bounded_number(api: APIClient, researcher: Any) -> None:
    campaign = make_campaign(researcher, settings=["explicit"])
    for value in ("1e400", "9" * 5000, "5.5", "nan"):
        _400(api.get(f"/api/campaigns/{campaign.pk}/demographics/?min_group={value}"), "min_group")


def test_an_example_image_id_over_bigint_is_a_400(api: APIClient, researcher: Any) -> None:
    campaign = make_campaign(researcher, settings=["explicit"])
    family = campaign.questions.values_list("family", flat=True).first() or "x"
    response = api.post(f"/api/campaigns/{campaign.pk}/examples/",
                        {"family": family, "image": "9" * 30, "answer": "Yes"}, format="json")
    assert response.status_code == 400, response.content[:300]


@pytest.mark.parametrize("backend,field", [
    ({"name": "diffusers", "model": "m", "guidance": 10**400}, "backend.guidance"),
    ({"name": "diffusers", "model": "m", "width": 8 * 10**6}, "backend.width"),
    ({"name": "placeholder", "width": 10**30}, "backend.width")])
def test_backend_numbers_are_bounded_at_spec_time(api: APIClient, backend: dict[str, Any], field: str) -> None:
    _400(api.post("/api/specs/preview/", {**PST, "backend": backend}, format="json"), field)


def test_pay_floor_is_a_bounded_number(api: APIClient) -> None:
    spec = {**PST, "annotation": {"redundancy": 5, "pay_floor_usd_per_hour": 10**400}}
    _400(api.post("/api/specs/preview/", spec, format="json"), "annotation.pay_floor_usd_per_hour")
