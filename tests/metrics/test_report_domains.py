"""Validity-domain warnings (issue 22): a figure that bench/validity.py measured outside the 93-97%
coverage band on a design stays in the report, flagged in `warnings` for that design
(`metrics.core.report_warnings.DOMAIN_RULES`), and is not flagged on a validated design."""
from __future__ import annotations

from bench.validity_cells._pst_sim import Design, simulate
from metrics.core import hybrid_intervals
from metrics.core import metric_intervals as mi
from metrics.core.report_warnings import DOMAIN_RULES, collecting, flag_domain
from metrics.options import ReportOptions
from metrics.sections.metric_intervals import pst_gap_intervals
from metrics.sections.sources import hybrid_section
from tests.builders.hybrid_data import hybrid_gep_data


def _gap_warnings(singles: int) -> list[dict[str, str]]:
    c = simulate(Design(k=10, singles=singles), 0)  # 20 paired persons per identity
    with collecting() as log:
        out = pst_gap_intervals(paired=c.paired, single=c.single, groups=c.group_of, treatment="paper", n_boot=20,
                                confidence=0.95, seed=0)
    assert out["micro_ci"]  # the per-identity intervals are shown on both designs
    return [w for w in log.as_list() if w["path"] == "pst.gap.micro_ci"]


def test_gap_interval_on_few_persons_is_flagged_conservative() -> None:
    few = _gap_warnings(12)  # 12 single persons per identity: shown (>= 10), conservative (< 20)
    assert len(few) == 1 and "conservative" in few[0]["message"]
    assert "pst.gap.micro_ci.newcombe.10_singles" in few[0]["message"] and "97.8%" in few[0]["message"]
    assert _gap_warnings(25) == []


def _score_warnings(fraction: float) -> list[str]:
    data, human, mdata = hybrid_gep_data(1, per_gender=300, fraction=fraction)
    with collecting() as log:
        out = hybrid_section(data, human, mdata, ReportOptions(n_boot=60), seed=3)
    assert out["neutral"]["score"]["ci"][0] is not None
    return [w["message"] for w in log.as_list() if w["path"] == "hybrid.clip_cls.neutral.score"]


def test_hybrid_gep_score_on_few_human_images_is_flagged() -> None:
    few = _score_warnings(0.2)  # about 60 human-labelled images per gender
    assert len(few) == 1 and "conservative" in few[0] and "sparse_80img_40human" in few[0]
    assert _score_warnings(0.6) == []  # about 180 per gender: validated


def test_rules_match_the_thresholds_the_sections_use() -> None:
    assert DOMAIN_RULES["hybrid.frequency.wilson_fallback"].threshold == hybrid_intervals.MIN_HUMAN_COUNT
    assert DOMAIN_RULES["pst.gap.micro_ci.conservative"].threshold > mi.MIN_GAP_PERSONS
    with collecting() as log:
        flag_domain("hybrid.frequency.wilson_fallback", "hybrid.x.neutral", n=2, total=8)
    (w,) = log.as_list()
    assert w["path"] == "hybrid.x.neutral" and w["message"].startswith("2 of 8 frequencies")
    assert "98.5%" in w["message"]


def _gep_campaign(pk: int, per_gender: int, f: tuple[float, float], seed: int) -> object:
    """A neutral GEP campaign of one attribute: `per_gender` images per gender, frequency f[g], one
    answer per question (no database)."""
    import numpy as np

    from metrics.extract.data import CampaignData, CampaignFacts

    rng = np.random.default_rng(seed)
    n = 2 * per_gender
    gender = np.where(np.arange(n) < per_gender, "woman", "man")
    yes = rng.random(n) < np.where(gender == "woman", f[0], f[1])
    spec = {"kind": "gep", "design": {"genders": [{"name": "woman"}, {"name": "man"}],
                                      "attributes": [{"name": "dress"}]}}
    facts = CampaignFacts(pk, f"c{pk}", "gep", "GEP", "open", 1, spec)
    meta = {"gender": gender, "attribute": np.full(n, "dress"), "context": np.full(n, "c"),
            "sample_index": np.zeros(n, dtype=np.int64)}
    return CampaignData(facts, np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64) + 10_000 * pk,
                        np.full(n, "neutral"), meta, np.arange(n), np.ones(n, dtype=np.int64),
                        np.where(yes, 1, 0), ["No", "Yes"])


def test_gep_score_comparison_of_unequal_precision_is_flagged() -> None:
    from metrics.compare.options import CompareOptions
    from metrics.sections.significance import significance

    def warnings(b_images: int, fb: tuple[float, float]) -> list[dict[str, str]]:
        a = _gep_campaign(1, 40, (0.55, 0.45), 1)
        out = significance([a, _gep_campaign(2, b_images, fb, 2)], ReportOptions(),  # type: ignore[list-item]
                           CompareOptions(test="permutation", draws=99, seed=1))
        (score,) = [r for r in out["comparisons"][0]["rows"] if r["metric"] == "score"]
        flagged = any(w["path"].endswith(".score") for w in out["comparisons"][0]["warnings"])
        # a flagged score difference is shown without its (invalid) interval and p-value
        assert (score["ci"] == [None, None] and score["p_value"] is None) == flagged
        assert score["difference"] is not None
        return out["comparisons"][0]["warnings"]

    (w,) = warnings(400, (0.15, 0.05))  # 40 images near 0.5 vs 400 near 0.1: standard errors 5 times apart
    rule = DOMAIN_RULES["compare.gep.score.unequal_precision"]
    assert w["path"] == "gep.neutral.score" and "precision" in w["message"] and rule.cell in w["message"]
    assert warnings(40, (0.50, 0.40)) == []  # the same design: no flag
    sparse = [w for w in warnings(40, (0.02, 0.01)) if w["path"] == "gep.neutral.vector"]  # about 1 present of 40
    assert len(sparse) == 1 and DOMAIN_RULES["compare.gep.vector.sparse"].cell in sparse[0]["message"]
    assert "mover-jeffreys" in sparse[0]["message"]
    out = significance([_gep_campaign(1, 40, (0.55, 0.45), 1), _gep_campaign(2, 40, (0.02, 0.01), 2)],  # type: ignore[list-item]
                       ReportOptions(), CompareOptions(test="permutation", draws=99, seed=1))
    rows = {r["metric"]: r for r in out["comparisons"][0]["rows"]}
    assert rows["vector"]["ci_method"] == "mover-jeffreys" and rows["score"]["ci_method"] == "bca-cluster"
    assert rows["vector"]["ci"][0] <= rows["vector"]["difference"] <= rows["vector"]["ci"][1]


def test_sparse_gep_attributes_are_flagged_conservative() -> None:
    import numpy as np

    from metrics.sections.gep import gep_section

    def warnings(per_gender: int, f: tuple[float, float]) -> list[dict[str, str]]:
        data = _gep_campaign(1, per_gender, f, 3)
        labels = np.where(data.a_code == 1, "Yes", "No").astype(object)  # type: ignore[attr-defined]
        with collecting() as log:
            out = gep_section(data, labels, np.zeros(labels.size, bool), ReportOptions(n_boot=50),  # type: ignore[arg-type]
                              seed=1)
        assert out["neutral"]["score_ci"][0] is not None
        return [w for w in log.as_list() if w["path"] == "gep.neutral"]

    (w,) = warnings(40, (0.05, 0.02))  # about 2 and 1 present questions
    assert "conservative" in w["message"] and DOMAIN_RULES["gep.sparse.conservative"].cell in w["message"]
    assert warnings(100, (0.5, 0.4)) == []


def test_neutrality_interval_near_balance_is_flagged_conservative() -> None:
    from metrics.sections.pst import _flag_neutrality

    def flagged(near: int) -> list[str]:
        with collecting() as log:
            _flag_neutrality("single", near, 40)
        return [w["message"] for w in log.as_list() if w["path"] == "pst.gender_balance.single.neutrality_ci"]

    (few,) = flagged(6)
    assert few.startswith("6 of 40 identities") and "conservative" in few
    assert "neutrality.100x10.one_person.balanced" in few and "99.5%" in few
    assert flagged(0) == []


def test_annotator_tests_with_a_small_group_are_flagged() -> None:
    from metrics.sections.annotators import _flag_small_groups

    tests = [{"a": "18-24", "b": "25-34"}, {"a": "18-24", "b": "35-44"}, {"a": "25-34", "b": "35-44"}]

    def flagged(sizes: dict[str, int]) -> list[str]:
        members = {g: list(range(n)) for g, n in sizes.items()}
        with collecting() as log:
            _flag_small_groups("age_band", tests, members)
        return [w["message"] for w in log.as_list() if w["path"] == "annotators.fields.age_band.tests"]

    (msg,) = flagged({"18-24": 5, "25-34": 160, "35-44": 12})
    assert msg.startswith("group(s) 18-24, 35-44 have fewer than 20 annotators (fewest 5)")
    assert "annotators.sts.weak_null.5_vs_160" in msg and "7.2%" in msg
    assert flagged({"18-24": 20, "25-34": 160, "35-44": 40}) == []
