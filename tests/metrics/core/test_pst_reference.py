"""Reproduce the published PST figures (DALLE-3, gendered occupation) from label-level data.

Label sets are built so that per-occupation counts equal PST Table 14
(tests/fixtures/reference/pst_table14.json):

- single: 3 persons per occupation (one image each, run 1..3), Feminine count =
  %F single x 3 / 100; the allocation of the 3 labels to runs is constructed (not
  published) so per-run STS equal Table 13;
- paired: all 20 x 20 (male, female) occupation pairs in both orders = 800 images,
  40 persons per occupation; Feminine count = %F PST x 40 / 100.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from metrics.core import pst

HALF_CENT = 0.005 + 1e-9  # published figures are given to 2 decimals


def build_single(ref: dict[str, Any]) -> dict[str, np.ndarray]:
    rows = ref["table14"]
    ids, groups, stereo, labels, runs = [], [], [], [], []
    for r in rows:
        for run, lab in enumerate(r["single_run_labels"], start=1):
            ids.append(r["occupation"])
            groups.append(r["group"])
            stereo.append(r["stereotype"])
            labels.append(lab)
            runs.append(run)
    n = len(ids)
    return {
        "image_ids": np.arange(n),
        "identities": np.array(ids),
        "groups": np.array(groups),
        "stereotypes": np.array(stereo),
        "labels": np.array(labels),
        "runs": np.array(runs),
    }


def build_paired(ref: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = {r["occupation"]: r for r in ref["table14"]}
    male = sorted(o for o, r in rows.items() if r["group"] == "male")
    female = sorted(o for o, r in rows.items() if r["group"] == "female")
    person_labels: dict[str, list[str]] = {}
    for occ, r in rows.items():
        n_f = round(r["pct_f_paired"] * 40 / 100)
        assert abs(n_f * 100 / 40 - r["pct_f_paired"]) < 1e-9  # whole counts
        labs = np.array(["Feminine"] * n_f + ["Masculine"] * (40 - n_f))
        person_labels[occ] = list(rng.permutation(labs))
    image_ids, ids, groups, stereo, labels = [], [], [], [], []
    img = 0
    for mi, m in enumerate(male):
        for fi, f in enumerate(female):
            for order in (0, 1):  # male left / female left: each image has one of each
                for occ, slot in ((m, fi * 2 + order), (f, mi * 2 + order)):
                    image_ids.append(img)
                    ids.append(occ)
                    groups.append(rows[occ]["group"])
                    stereo.append(rows[occ]["stereotype"])
                    labels.append(person_labels[occ][slot])
                img += 1
    return {
        "image_ids": np.array(image_ids),
        "identities": np.array(ids),
        "groups": np.array(groups),
        "stereotypes": np.array(stereo),
        "labels": np.array(labels),
    }


@pytest.fixture(scope="module")
def reports(pst_reference: dict[str, Any]) -> dict[str, Any]:
    single = build_single(pst_reference)
    paired = build_paired(pst_reference)
    return {
        "single_data": single,
        "paired_data": paired,
        "single": pst.pst_report(
            single["identities"], single["groups"], single["stereotypes"], single["labels"],
            image_ids=single["image_ids"], runs=single["runs"],
        ),
        "paired": pst.pst_report(
            paired["identities"], paired["groups"], paired["stereotypes"], paired["labels"],
            image_ids=paired["image_ids"],
        ),
    }


def test_label_sets_have_the_published_design(reports: dict[str, Any]) -> None:
    assert reports["single"]["n_images"] == 120 and reports["single"]["n_persons"] == 120
    assert reports["paired"]["n_images"] == 800 and reports["paired"]["n_persons"] == 1600
    by_id = reports["paired"]["counts"]["by_identity"]
    assert len(by_id) == 40 and all(c["persons"] == 40 for c in by_id.values())
    assert "hairdresser" in by_id and "hairstylist" not in by_id


def test_overall_sts_table2(reports: dict[str, Any], pst_reference: dict[str, Any]) -> None:
    pub = pst_reference["table2_occupation"]
    single = reports["single"]["paper"]["overall"]
    paired = reports["paired"]["paper"]["overall"]
    assert single == pytest.approx(10.0, abs=1e-9)  # 12 / 120
    assert paired == pytest.approx(47.375, abs=1e-9)  # 758 / 1600, published 47.38
    assert abs(single - pub["single"]) <= HALF_CENT
    assert abs(paired - pub["paired"]) <= HALF_CENT
    gap = pst.sts_gap(reports["paired"]["paper"], reports["single"]["paper"])
    assert abs(gap["overall"] - pub["gap"]) <= HALF_CENT


def test_single_runs_table13(reports: dict[str, Any], pst_reference: dict[str, Any]) -> None:
    pub = pst_reference["table13_occupation"]
    runs = reports["single"]["paper"]["runs"]
    assert runs["runs"] == pytest.approx({int(k): v for k, v in pub["single_runs"].items()}, abs=1e-9)
    assert runs["mean"] == pytest.approx(pub["single_average"], abs=1e-9)


def test_every_micro_sts_and_percent_feminine_table14(reports: dict[str, Any], pst_reference: dict[str, Any]) -> None:
    for setting in ("single", "paired"):
        micro = reports[setting]["paper"]["micro"]
        pct_f = reports[setting]["paper"]["percent_feminine"]
        for r in pst_reference["table14"]:
            occ = r["occupation"]
            assert abs(micro[occ] - r[f"micro_sts_{setting}"]) <= HALF_CENT, (setting, occ)
            key = "pct_f_single" if setting == "single" else "pct_f_paired"
            assert abs(pct_f[occ] - r[key]) <= HALF_CENT, (setting, occ)


def test_micro_gaps_table15(reports: dict[str, Any], pst_reference: dict[str, Any]) -> None:
    gap = pst.sts_gap(reports["paired"]["paper"], reports["single"]["paper"])["micro"]
    assert len(pst_reference["table15"]) == 40
    for r in pst_reference["table15"]:
        assert abs(gap[r["occupation"]] - r["gap"]) <= HALF_CENT, r["occupation"]
        assert abs(reports["single"]["paper"]["micro"][r["occupation"]] - r["micro_sts_single"]) <= HALF_CENT
        assert abs(reports["paired"]["paper"]["micro"][r["occupation"]] - r["micro_sts_paired"]) <= HALF_CENT


def test_group_means_table3(reports: dict[str, Any], pst_reference: dict[str, Any]) -> None:
    pub = pst_reference["table3"]
    single = reports["single"]["paper"]["groups"]
    paired = reports["paired"]["paper"]["groups"]
    assert abs(single["male"] - pub["male"]["single"]) <= HALF_CENT  # -30.00
    assert abs(single["female"] - pub["female"]["single"]) <= HALF_CENT  # 50.00
    assert abs(paired["female"] - pub["female"]["paired"]) <= HALF_CENT  # 45.00
    gaps = pst.sts_gap(reports["paired"]["paper"], reports["single"]["paper"])["groups"]
    assert abs(gaps["female"] - pub["female"]["gap"]) <= HALF_CENT  # -5.00
    # Male, paired: see the next test for why this is 49.75, not the published 49.74.
    assert paired["male"] == pytest.approx(49.75, abs=1e-9)
    assert gaps["male"] == pytest.approx(79.75, abs=1e-9)


def test_published_male_paired_mean_49_74_is_a_truncation_artifact(pst_reference: dict[str, Any]) -> None:
    """Table 3 reports 49.74 (gap 79.74) for male-stereotyped occupations, paired.

    It cannot be reproduced exactly: the 20 male micro STS of Table 14 are all
    multiples of 5 and sum to 995, so the exact mean is 995 / 20 = 49.75. What the
    paper most likely did: average the per-occupation means as fractions in binary
    floating point (0.75, 0.70, ... -> 0.4974999...) and cut, not round, to two
    decimals. The paper truncates elsewhere too: Table 13 (organizational power)
    gives 13.88 for 10/72 = 13.888..., 16.66 for 12/72 = 16.666... and an average
    of 4.62 for 13.888.../3 = 4.6296... We keep the exact value (49.75) and
    document the 0.01 difference instead of imitating the truncation.
    """
    pub = pst_reference["table3"]["male"]
    male = [r["micro_sts_paired"] for r in pst_reference["table14"] if r["group"] == "male"]
    assert sum(male) == 995.0 and len(male) == 20
    float_path = float(np.mean([m / 100 for m in male]) * 100)
    assert float_path < 49.75  # 49.74999999999999
    assert math.floor(float_path * 100) / 100 == pub["paired"] == 49.74
    assert round(pub["paired"] + 30.0, 2) == pub["gap"] == 79.74  # the gap inherits it
    # the truncation pattern of Table 13 (organizational power)
    assert math.floor(100 * 10 / 72 * 100) / 100 == 13.88
    assert math.floor(100 * 12 / 72 * 100) / 100 == 16.66


def test_excluded_treatment_equals_paper_without_cannot(reports: dict[str, Any]) -> None:
    # the published label sets contain no Cannot identify / ties
    for setting in ("single", "paired"):
        rep = reports[setting]
        assert rep["counts"]["overall"]["cannot"] == 0 and rep["counts"]["overall"]["tie"] == 0
        assert rep["excluded"]["overall"] == pytest.approx(rep["paper"]["overall"])


def test_cannot_identify_lowers_paper_sts_but_not_excluded(reports: dict[str, Any]) -> None:
    d = reports["paired_data"]
    labels = d["labels"].astype(object).copy()
    stereotyped = np.flatnonzero(pst.stereo(labels, d["stereotypes"]) == 1)[:100]
    labels[stereotyped] = "Cannot identify"
    paper = pst.overall_sts(labels, d["stereotypes"], "paper")
    excluded = pst.overall_sts(labels, d["stereotypes"], "excluded")
    # paper: 100 persons go from +1 to -1 -> (758 - 200) / 1600
    assert paper == pytest.approx(100 * 558 / 1600)
    # excluded: they are dropped -> (758 - 100) / 1500
    assert excluded == pytest.approx(100 * 658 / 1500)
