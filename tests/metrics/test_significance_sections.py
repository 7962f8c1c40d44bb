"""`metrics.sections.significance` on hand-built data (no database): the amplification rows appear when both
campaigns' specs name a reference (spec `references`, templates from the question metadata), and
not otherwise; the pooled agreement aligns campaigns whose choices differ."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from metrics.compare.options import CompareOptions
from metrics.extract.data import CampaignData, CampaignFacts
from metrics.options import ReportOptions
from metrics.sections.significance import pooled_agreement, significance

CHOICES = ["Cannot identify", "Feminine", "Masculine"]
GROUPS = [{"name": "male", "stereotype": "masculine", "identities": ["pilot", "ceo"]},
          {"name": "female", "stereotype": "feminine", "identities": ["nurse", "nanny"]}]


def _data(pk: int, feminine_share: float, references: Any, seed: int) -> CampaignData:
    """Single-person PST images: 40 per (identity, template), labelled Feminine with the given share
    (male identities) or 1 - share (female ones), 3 identical answers each."""
    rng = np.random.default_rng(seed)
    spec = {"kind": "pst", "design": {"identities": {"groups": GROUPS}, "settings": ["single"]}}
    if references is not None:
        spec["references"] = references
    ident, tmpl, group, fem = [], [], [], []
    for g in GROUPS:
        for i in g["identities"]:
            for t in ("t1", "t2"):
                share = feminine_share if g["name"] == "male" else 1 - feminine_share
                k = 40
                ident += [i] * k
                tmpl += [t] * k
                group += [g["name"]] * k
                fem += list(rng.random(k) < share)
    n = len(ident)
    codes = np.where(np.array(fem), 1, 2)
    facts = CampaignFacts(pk, f"c{pk}", "pst", "PST", "open", 1, spec)
    meta = {"identity": np.array(ident), "group": np.array(group), "position": np.full(n, "single"),
            "sample_index": np.zeros(n, dtype=np.int64), "template": np.array(tmpl)}
    return CampaignData(facts, np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64) + 1000 * pk,
                        np.full(n, "single"), meta, np.repeat(np.arange(n), 3), np.tile([1, 2, 3], n),
                        np.repeat(codes, 3), CHOICES)


def test_amplification_rows_when_both_specs_name_the_reference() -> None:
    ref = [{"name": "BLS", "source": "BLS 2023", "percent_female": {"pilot": 10, "ceo": 30, "nurse": 88, "nanny": 95}}]
    a, b = _data(1, 0.02, ref, 1), _data(2, 0.25, ref, 2)  # A skews further male on male jobs
    sig = significance([a, b], ReportOptions(), CompareOptions(test="permutation", draws=300, seed=4))
    rows = {(r["section"], r["metric"], r["name"]): r for r in sig["comparisons"][0]["rows"]}
    avg = rows[("amplification.BLS", "average", "")]
    assert avg["difference"] > 0 and avg["p_value"] < 0.05 and avg["family"] is None
    assert {n for s, m, n in rows if s == "amplification.BLS" and m == "template"} == {"t1", "t2"}
    assert rows[("amplification.BLS", "template", "t1")]["family"] == "amplification.BLS.template"
    none = significance([_data(1, 0.02, None, 1), _data(2, 0.25, ref, 2)], ReportOptions(),
                        CompareOptions(test="permutation", draws=50))
    assert not [r for r in none["comparisons"][0]["rows"] if r["section"].startswith("amplification")]
    assert ("pst.single", "overall", "") in {(r["section"], r["metric"], r["name"]) for r in none["comparisons"][0]["rows"]}


def test_pooled_alpha_aligns_the_choices() -> None:
    a = _data(1, 0.1, None, 1)
    b = _data(2, 0.1, None, 2)
    b.choices = ["Feminine", "Masculine", "Unsure"]  # codes 1 / 2 now mean Masculine / Unsure
    out = pooled_agreement([a, b], CompareOptions(test="permutation", draws=200))
    assert out["choices"] == ["Cannot identify", "Feminine", "Masculine", "Unsure"]
    assert out["krippendorff_alpha"] == pytest.approx(1.0)  # every question unanimous on both sides
    assert out["questions"] == a.q_id.size + b.q_id.size and out["answers"] == 3 * out["questions"]
