"""The interval of every PST / GEP figure of the report, by the method suited to its statistic
(`metrics.core.intervals.METHODS`), each containing its estimate:

- overall and group STS, per-run STS and their mean, the paired-minus-single gap overall and per
  group: BCa over images (`"bca-cluster"`); the gap per identity: Newcombe with the design effect
  (`"newcombe-deff"`), from 10 counted persons per side;
- micro STS and %F per identity: Wilson with the image design effect (`"wilson-deff"`);
- GEP score: inversion of a bootstrap test (`"gep-test-inversion"`; the percentile bootstrap of a
  mean of absolute differences is biased upward near 0 and could exclude its estimate);
  GEP vector components: Newcombe (`"newcombe"`); frequencies: Wilson.

Every `<key>_ci` comes with `<key>_ci_method`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from metrics.core import metric_intervals as mi
from metrics.core.gep import Frequencies, GepTiePolicy, RowCodes
from metrics.core.pst import Treatment, stereo_weights, sts_by_run
from metrics.core.pst_analysis import runs_sts
from metrics.core.report_warnings import DOMAIN_RULES, flag_domain, warn
from metrics.core.significance import compare_pst

from .types import GepSettingIntervals, PstRuns, PstSettingIntervals
from .values import ci_of, interval, num


def pst_setting_intervals(*, images: np.ndarray, identities: np.ndarray, groups: np.ndarray,
                          stereotypes: np.ndarray, labels: np.ndarray, treatment: Treatment, n_boot: int,
                          confidence: float, seed: int) -> PstSettingIntervals:
    """`overall_ci`, `micro_ci`, `groups_ci`, `percent_feminine_ci` (and their `_method`) of one setting."""
    overall = mi.sts_interval(images, labels, stereotypes, treatment, n_boot, confidence, seed)
    micro = mi.micro_sts_intervals(images, identities, labels, stereotypes, treatment, confidence)
    group = mi.group_sts_intervals(images, identities, groups, labels, stereotypes, treatment,
                                   n_boot, confidence, seed)
    pf = mi.percent_feminine_intervals(images, identities, labels, treatment, confidence)
    return {
        "overall_ci": ci_of(overall), "overall_ci_method": overall.method,
        "micro_ci": {k: ci_of(v) for k, v in sorted(micro.items())}, "micro_ci_method": "wilson-deff",
        "groups_ci": {k: ci_of(v) for k, v in sorted(group.items())}, "groups_ci_method": "bca-cluster",
        "percent_feminine_ci": {k: ci_of(v) for k, v in sorted(pf.items())},
        "percent_feminine_ci_method": "wilson-deff",
    }


def pst_runs(*, images: np.ndarray, runs: np.ndarray, labels: np.ndarray, stereotypes: np.ndarray, treatment: Treatment,
             n_boot: int, confidence: float, seed: int) -> PstRuns:
    """STS per run (run n = sample index n-1) and their mean, with intervals computed from the runs
    (`metrics.core.pst_analysis.runs_sts`: images resampled within each run). Questions of one image
    with different sample indexes (hand-made or damaged metadata) leave the runs without intervals
    (`runs_ci_note`) rather than fail the report."""
    try:
        res = runs_sts(images, runs, labels, stereotypes, treatment, n_boot, confidence, seed)
    except ValueError as exc:
        plain = sts_by_run(runs, labels, stereotypes, treatment)
        keys = sorted(plain["runs"])
        s, w = stereo_weights(labels, stereotypes, treatment)
        return {"runs": [num(plain["runs"][k]) for k in keys], "run_ids": [int(k) + 1 for k in keys],
                "runs_persons": [int(w[runs == k].sum()) for k in keys], "runs_mean": num(plain["mean"]),
                "runs_ci_note": f"no interval: {exc}"}
    keys = sorted(res["runs"])
    out: PstRuns = {
        "runs": [num(res["runs"][k]) for k in keys],
        "run_ids": [int(k) + 1 for k in keys],
        "runs_persons": [int(res["persons"][k]) for k in keys],
        "runs_mean": num(res["runs_mean"]),
    }
    if "runs_ci" in res:
        out["runs_ci"] = [interval(*res["runs_ci"][k]) for k in keys]
        out["runs_ci_method"] = res["method"]
        out["runs_mean_ci"] = interval(*res["runs_mean_ci"])
        out["runs_mean_ci_method"] = res["method"]
    return out


def pst_gap_intervals(*, paired: Mapping[str, np.ndarray], single: Mapping[str, np.ndarray],
                      groups: Mapping[str, str], treatment: Treatment, n_boot: int, confidence: float,
                      seed: int) -> dict[str, Any]:
    """Intervals of paired minus single: overall and per group BCa over images, resampled within each
    setting (`metrics.core.significance.compare_pst`; the report's `gap.permutation_test` is the
    test); per identity Newcombe's interval with the design effect of each side
    (`metrics.core.metric_intervals.micro_gap_intervals`), printed only for identities with at least
    `MIN_GAP_PERSONS` counted persons on each side (a warning names the rest: a bootstrap over the 3
    single images of an identity covered about 56%, issue 22)."""
    # Every identity of either setting, as the printed gap (each side's overall and group STS over its own
    # identities); the shared ones only would miss it where the settings differ (the power aspect).
    union = sorted(set(np.asarray(paired["identities"]).astype(str).tolist())
                   | set(np.asarray(single["identities"]).astype(str).tolist()))
    cmp = compare_pst(paired, single, groups, treatment, union, n_boot, 0, confidence, seed)
    micro = mi.micro_gap_intervals(paired, single, treatment, confidence)
    shown = {k: c for k, c in micro.items()
             if min(c.notes["persons_a"], c.notes["persons_b"]) >= mi.MIN_GAP_PERSONS}
    if len(shown) < len(micro):
        small = [c for k, c in micro.items() if k not in shown]
        fewest_single = min(c.notes["persons_b"] for c in small)
        fewest_paired = min(c.notes["persons_a"] for c in small)
        warn("pst.gap.micro_ci",
             f"{len(small)} of {len(micro)} identities have fewer than {mi.MIN_GAP_PERSONS} counted persons in a "
             f"setting (fewest: {fewest_single} single, {fewest_paired} paired): their per-identity gap interval "
             "is not computed (the Newcombe interval is validated from "
             f"{mi.MIN_GAP_PERSONS} persons per side and identity)")
    rule = DOMAIN_RULES["pst.gap.micro_ci.conservative"]
    few = [k for k, c in shown.items() if min(c.notes["persons_a"], c.notes["persons_b"]) < rule.threshold]
    if few:
        flag_domain("pst.gap.micro_ci.conservative", "pst.gap.micro_ci", n=len(few), shown=len(shown))
    return {
        "overall_ci": interval(cmp["overall"].low, cmp["overall"].high), "overall_ci_method": cmp["overall"].ci_method,
        "micro_ci": {k: interval(c.low, c.high) for k, c in sorted(shown.items())},
        "micro_ci_method": "newcombe-deff",
        "groups_ci": {k: interval(d.low, d.high) for k, d in sorted(cmp["groups"].items())},
        "groups_ci_method": "bca-cluster",
    }


def gep_setting_intervals(*, images: np.ndarray, genders: np.ndarray | None, attributes: np.ndarray | None,
                          labels: np.ndarray,
                          gender_order: list[str], attribute_order: list[str], tie_policy: GepTiePolicy, n_boot: int,
                          confidence: float, seed: int, frequencies: Frequencies | None = None,
                          codes: RowCodes | None = None) -> GepSettingIntervals:
    """`score_ci` (test inversion), `vector_ci` (Newcombe), `frequencies_ci` (Wilson) of one setting
    (`frequencies`: its `attribute_frequencies`, `codes`: its rows' `row_codes`, when the caller has them)."""
    res = mi.gep_intervals(images, genders, attributes, labels, gender_order[:2], attribute_order, tie_policy,
                           n_boot, confidence, seed, frequencies, codes)
    score = res["score"]
    return {
        "score_ci": ci_of(score), "score_ci_method": score.method, "score_ci_extended": bool(score.extended),
        "vector_ci": {a: ci_of(c) for a, c in res["vector"].items()}, "vector_ci_method": "newcombe",
        "frequencies_ci": {g: {a: ci_of(c) for a, c in row.items()} for g, row in res["frequencies"].items()},
        "frequencies_ci_method": "wilson",  # no design effect is applied (one question per image and cell)
    }
