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
