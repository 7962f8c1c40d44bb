"""Amplification: direction rules, exclusions, uncovered identities, comparisons."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics.core import amplification as amp


def test_direction_rules() -> None:
    assert amp.amplification_value(10.0, 30.0) == (20.0, None)  # male-skewed, generated further male
    assert amp.amplification_value(40.0, 30.0) == (-10.0, None)  # de-amplification, same direction: kept
    assert amp.amplification_value(90.0, 70.0) == (20.0, None)  # female-skewed, further female
    assert amp.amplification_value(60.0, 30.0)[1] == "direction change"
    assert amp.amplification_value(40.0, 70.0)[1] == "direction change"
    assert amp.amplification_value(50.0, 30.0)[1] == "direction change"  # balanced generation has no direction
    a, reason = amp.amplification_value(20.0, 50.0)
    assert math.isnan(a) and reason == "balanced reference"


def test_uncovered_and_missing_identities_are_listed_not_dropped() -> None:
    gen = {"t1": {"nurse": 95.0, "chief": 10.0, "pilot": 20.0}, "t2": {"nurse": 90.0}}
    ref = {"nurse": 88.0, "chief": None, "pilot": 30.0}
    res = amp.amplification(gen, ref)
    assert res["uncovered"] == ["chief"]
    assert res["templates"]["t2"]["missing"] == ["pilot"]
    assert res["templates"]["t1"]["kept"] == ["nurse", "pilot"]
    assert res["templates"]["t1"]["mean"] == pytest.approx((7.0 + 10.0) / 2)
    assert res["templates"]["t2"]["mean"] == pytest.approx(2.0)
    assert res["average"] == pytest.approx((8.5 + 2.0) / 2)
    assert res["templates"]["t2"]["ttest"]["t"] is None  # one value: no test


def _labels(pct: dict[str, float], n: int, rng: np.random.Generator, template: str, img0: int):
    ident, tmpl, lab, img = [], [], [], []
    for o, p in pct.items():
        f = rng.random(n) < p / 100
        ident += [o] * n
        tmpl += [template] * n
        lab += np.where(f, "Feminine", "Masculine").tolist()
        img += list(range(img0, img0 + n))
        img0 += n
    return ident, tmpl, lab, img, img0


def test_compare_amplification_finds_a_real_difference_and_not_a_null_one() -> None:
    rng = np.random.default_rng(3)
    ref = {"nurse": 85.0, "pilot": 30.0, "ceo": 20.0, "teacher": 70.0}
    strong = {"nurse": 98.0, "pilot": 5.0, "ceo": 3.0, "teacher": 92.0}
    weak = {"nurse": 88.0, "pilot": 25.0, "ceo": 17.0, "teacher": 74.0}

    def side(pct: dict[str, float]) -> dict[str, np.ndarray]:
        i1, t1, l1, m1, n = _labels(pct, 150, rng, "p1", 0)
        i2, t2, l2, m2, _ = _labels(pct, 150, rng, "p2", n)
        return {"identities": np.array(i1 + i2), "templates": np.array(t1 + t2), "labels": np.array(l1 + l2),
                "image_ids": np.array(m1 + m2)}

    a, b, b2 = side(strong), side(weak), side(weak)
    res = amp.compare_amplification(a, b, ref, n_boot=500, n_perm=500, seed=1)
    d = res["average"]
    assert d.difference > 10 and d.low > 0 and d.p_value < 0.01
    assert d.low <= d.difference <= d.high and set(res["templates"]) == {"p1", "p2"}
    assert res["templates"]["p1"].p_holm is not None and res["templates"]["p1"].p_holm >= res["templates"]["p1"].p_value
    same = amp.compare_amplification(b, b2, ref, n_boot=500, n_perm=500, seed=1)["average"]
    assert same.low <= 0 <= same.high and same.p_value > 0.05


def test_null_test_accounts_for_the_exclusion_and_detects_real_amplification() -> None:
    from metrics.core.amplification import amplification_null_test

    rng = np.random.default_rng(5)
    ref = rng.uniform(20, 80, size=30)
    n = np.full((1, 30), 3.0)  # 3 images per identity: the exclusion alone moves the mean up
    fem = rng.binomial(3, ref / 100.0)[None].astype(float)
    res = amplification_null_test(fem, n, ref, n_draws=999, seed=1)
    assert res["with_exclusion"]["null_mean"] > 3.0 and res["without_exclusion"]["null_mean"] == pytest.approx(0, abs=2)
    many = np.full((1, 30), 400.0)
    skewed = np.where(ref < 50, ref - 15, ref + 15)  # amplified by 15 points
    strong = amplification_null_test(rng.binomial(400, skewed / 100.0)[None].astype(float), many, ref, 999, 2)
    assert strong["with_exclusion"]["p_value"] < 0.01 and strong["without_exclusion"]["observed"] > 10
