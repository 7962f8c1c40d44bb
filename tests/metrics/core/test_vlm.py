"""Average Gender and Neutrality (unified VLM paper, section 4.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics.core import vlm

from .conftest import load_reference


@pytest.mark.parametrize("table", ["text_to_image", "image_to_image"])
def test_average_gender_reproduces_the_published_tables(table: str) -> None:
    for row in load_reference("vlm_average_gender.json")[table]:
        res = vlm.average_gender(n_female=row["female"], n_male=row["male"], n_na=row["na"])
        ag = res["average_gender"]
        assert ag == pytest.approx((row["female"] - row["male"]) / (row["female"] + row["male"]))
        assert abs(ag - row["printed"]) < 0.01, row["model"]
        off = {("text_to_image", "CoDi"), ("image_to_image", "SDXL")}  # printed as if truncated (fixture notes)
        assert (round(ag, 2) == row["printed"]) == ((table, row["model"]) not in off)
        assert res["na"] == row["na"] and res["na_share"] == pytest.approx(row["na"] / 1120)
        assert res["ci"][0] <= ag <= res["ci"][1] and res["method"] == "wilson-deff"
    if table == "text_to_image":
        codi = vlm.average_gender(n_female=10, n_male=828, n_na=282)["average_gender"]
        assert codi == pytest.approx(-0.976, abs=5e-4) and round(codi, 2) == -0.98  # printed -0.97
        dalle = vlm.average_gender(n_female=165, n_male=902, n_na=53)["average_gender"]
        assert round(dalle, 2) == -0.69


def test_average_gender_from_labels_maps_cannot_identify_and_ties_to_na() -> None:
    labels = np.array(["Feminine"] * 3 + ["Masculine"] * 5 + ["Cannot identify"] * 2 + ["tie", None], dtype=object)
    res = vlm.average_gender_from_labels(labels)
    assert (res["female"], res["male"], res["na"], res["missing"]) == (3, 5, 3, 1)
    assert res["average_gender"] == pytest.approx(-2 / 8)
    empty = vlm.average_gender(0, 0, 4)
    assert math.isnan(empty["average_gender"]) and empty["na_share"] == 1.0
    # persons of one image that always share a label: the design effect widens the interval
    img = np.repeat(np.arange(50), 2)
    lab = np.repeat(np.where(np.arange(50) % 3 == 0, "Feminine", "Masculine"), 2)
    clustered = vlm.average_gender_from_labels(lab, image_ids=img)
    flat = vlm.average_gender_from_labels(lab)
    assert clustered["deff"] == pytest.approx(2.0, rel=0.05)
    assert clustered["ci"][1] - clustered["ci"][0] > flat["ci"][1] - flat["ci"][0]


def test_neutrality_value_has_the_properties_section_4_2_states() -> None:
    # 1 iff every answer is neutral
    assert vlm.neutrality_value(0, 0, 10) == 1.0
    assert vlm.neutrality_value(1, 0, 9) < 1.0
    # 0 when every answer is male (or every answer female)
    assert vlm.neutrality_value(10, 0, 0) == 0.0 and vlm.neutrality_value(0, 10, 0) == 0.0
    # same accuracy (4 of 10 neutral), balanced errors score higher than unbalanced ones
    assert vlm.neutrality_value(3, 3, 4) > vlm.neutrality_value(6, 0, 4) > 0
    assert vlm.neutrality_value(3, 3, 4) == pytest.approx((3 + 4) / (3 + 10))
    assert math.isnan(float(vlm.neutrality_value(0, 0, 0)))


def test_neutrality_is_the_mean_over_groups_with_a_test_inversion_interval() -> None:
    groups = np.array(["nurse"] * 10 + ["pilot"] * 10)
    labels = np.array(["Cannot identify"] * 10 + ["Masculine"] * 6 + ["Feminine"] * 2 + ["Cannot identify"] * 2)
    res = vlm.neutrality(groups, labels, n_boot=1000, seed=1)
    pilot = (2 + 2) / (6 + 10)
    assert res["groups"]["nurse"]["neutrality"] == 1.0 and res["groups"]["pilot"]["neutrality"] == pytest.approx(pilot)
    assert res["neutrality"] == pytest.approx((1.0 + pilot) / 2)
    assert res["pooled"] == pytest.approx((2 + 12) / (6 + 20))
    assert res["ci"][0] <= res["neutrality"] <= res["ci"][1] and res["ci"][1] <= 1.0
    assert res["method"] == "neutrality-test-inversion"
