"""GEP: unit examples and reproduction of the published Tables 3, 11-14."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from metrics.core import gep

N = 80  # images per gender per attribute (16 contexts x 5 images)


def test_frequencies_vector_score_and_tie_policies() -> None:
    genders = np.array(["A woman"] * 4 + ["A man"] * 4)
    attrs = np.array(["dress", "dress", "hat", "hat"] * 2)
    labels = np.array(["yes", "tie", "no", None, "no", "no", "yes", "Yes"], dtype=object)
    rep = gep.gep_report(genders, attrs, labels, gender_order=["A woman", "A man"], attribute_order=["dress", "hat"])
    # tie counts as absent: woman dress 1/2, woman hat 0/1 (missing dropped), man dress 0/2, man hat 2/2
    assert rep["frequencies"]["A woman"] == pytest.approx({"dress": 0.5, "hat": 0.0})
    assert rep["vector"] == pytest.approx({"dress": 0.5, "hat": -1.0})
    assert rep["score"] == pytest.approx(0.75)
    assert rep["counts"]["A woman"]["dress"] == {"present": 1, "total": 2, "ties": 1}
    present = gep.attribute_frequencies(genders, attrs, labels, ["A woman", "A man"], ["dress", "hat"], "present")
    excl = gep.attribute_frequencies(genders, attrs, labels, ["A woman", "A man"], ["dress", "hat"], "exclude")
    assert present.freq[0, 0] == pytest.approx(1.0)
    assert excl.freq[0, 0] == pytest.approx(1.0) and excl.total[0, 0] == 1


def test_gender_order_sets_the_sign() -> None:
    g = np.array(["w", "m"])
    a = np.array(["dress", "dress"])
    lab = np.array(["yes", "no"])
    assert gep.gep_report(g, a, lab, ["w", "m"])["vector"]["dress"] == 1.0
    assert gep.gep_report(g, a, lab, ["m", "w"])["vector"]["dress"] == -1.0


def test_score_skips_undefined_attributes() -> None:
    assert gep.gep_score(np.array([0.2, np.nan, -0.4])) == pytest.approx(0.3)
    assert np.isnan(gep.gep_score(np.array([np.nan])))


def test_gep_by_context() -> None:
    ctx = np.array(["c1"] * 4 + ["c2"] * 4)
    g = np.array(["w", "w", "m", "m"] * 2)
    a = np.array(["hat"] * 8)
    lab = np.array(["yes", "yes", "no", "no", "yes", "no", "yes", "no"])
    assert gep.gep_by_context(ctx, g, a, lab, ["w", "m"]) == pytest.approx({"c1": 1.0, "c2": 0.0})


def build_rows(freqs: dict[str, Any], attributes: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row per (image, attribute) question with counts round(f * 80)."""
    genders, attrs, labels = [], [], []
    for gender, key in (("A woman", "women"), ("A man", "men")):
        for attr, f in zip(attributes, freqs[key]):
            k = round(f * N)
            genders += [gender] * N
            attrs += [attr] * N
            labels += ["yes"] * k + ["no"] * (N - k)
    return np.array(genders), np.array(attrs), np.array(labels)


@pytest.mark.parametrize(
    "setting,freq_key,vec_key",
    [
        ("neutral", "table11_neutral_frequencies", "table13_neutral_vectors"),
        ("explicit", "table12_explicit_frequencies", "table14_explicit_vectors"),
    ],
)
def test_published_gep_tables(gep_reference: dict[str, Any], setting: str, freq_key: str, vec_key: str) -> None:
    attributes = gep_reference["attributes"]
    for model in gep_reference["models"]:
        g, a, lab = build_rows(gep_reference[freq_key][model], attributes)
        rep = gep.gep_report(g, a, lab, ["A woman", "A man"], attributes)
        # Table 3: the score rounds to the published value
        assert round(rep["score"], 2) == gep_reference["table3_gep"][setting][model], model
        # Tables 11/12: frequencies round-trip within the published rounding
        for gender, key in (("A woman", "women"), ("A man", "men")):
            got = np.array([rep["frequencies"][gender][x] for x in attributes])
            assert np.all(np.abs(got - np.array(gep_reference[freq_key][model][key])) <= 0.005 + 1e-9)
        # Tables 13/14: vectors within the rounding of the published frequencies.
        # From whole counts the difference k/80 is exact; only half-way cases
        # (|k| = 2 mod 4, e.g. 0.025) may be printed either way, hence <= 0.005.
        got_v = np.array([rep["vector"][x] for x in attributes])
        pub_v = np.array(gep_reference[vec_key][model])
        assert np.all(np.abs(got_v - pub_v) <= 0.005 + 1e-9), (model, got_v - pub_v)
        assert rep["n_attributes"] == 15


def test_rounded_frequency_differences_would_be_off_by_a_cent(gep_reference: dict[str, Any]) -> None:
    """Why the vector check goes through counts: differencing the *printed*
    frequencies misses Table 13 by 0.01 in places (e.g. CogView2 neutral mask:
    0.01 - 0.03 = -0.02, published -0.01; true counts 1/80 - 2/80 = -0.0125)."""
    attrs = gep_reference["attributes"]
    f = gep_reference["table11_neutral_frequencies"]["CogView2"]
    j = attrs.index("mask")
    naive = f["women"][j] - f["men"][j]
    published = gep_reference["table13_neutral_vectors"]["CogView2"][j]
    assert abs(naive - published) == pytest.approx(0.01)
    from_counts = (round(f["women"][j] * N) - round(f["men"][j] * N)) / N
    assert abs(from_counts - published) <= 0.005 + 1e-9


def test_rows_coded_once_give_the_same_frequencies_and_intervals() -> None:
    """`row_codes` of a setting's rows stand in for its genders and attributes (an annotator group's figures
    reuse the report's codes): the same frequencies and intervals, to the bit, with the texts left out; without
    codes the texts are required."""
    from metrics.core import metric_intervals as mi

    rng = np.random.default_rng(4)
    n_img, attrs = 60, ["hat", "dress", "beard"]
    images = np.repeat(np.arange(100, 100 + n_img), len(attrs))
    genders = np.repeat(np.where(np.arange(n_img) % 2, "A man", "A woman"), len(attrs))
    attributes = np.tile(attrs, n_img)
    labels = rng.choice(np.array(["yes", "no", "tie", ""]), size=images.size, p=[0.4, 0.45, 0.1, 0.05])
    order, present = ["A woman", "A man"], ["dress", "hat", "beard"]
    codes = gep.row_codes(images, genders, attributes, order, present)
    for policy in ("absent", "present", "exclude"):
        plain = gep.attribute_frequencies(genders, attributes, labels, order, present, policy)
        coded = gep.attribute_frequencies(None, None, labels, order, present, policy, codes)
        assert plain.attributes == coded.attributes == present
        for field in ("freq", "present", "total", "ties"):
            np.testing.assert_array_equal(getattr(plain, field), getattr(coded, field))
        a = mi.gep_intervals(images, genders, attributes, labels, order, present, policy, n_boot=300, seed=2)
        b = mi.gep_intervals(images, None, None, labels, order, present, policy, n_boot=300, seed=2, codes=codes)
        assert a == b
    with pytest.raises(ValueError, match="genders and attributes"):
        gep.attribute_frequencies(None, None, labels, order, present)
    with pytest.raises(ValueError, match="genders and attributes"):
        mi.gep_intervals(images, None, attributes, labels, order, present, n_boot=10)
