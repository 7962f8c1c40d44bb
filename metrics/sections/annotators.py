"""The report section `annotators`: who labelled, and the headline figures per group of annotators.

- Keyed by the campaign's latest numbered demographics release (`release`; docs/security.md,
  "Demographics release rule"): only its members count, so the section does not move while
  annotators join. Before the first release it reports no group.
- Per demographic field (gender, age band, country: the annotators' consented self-reports to the
  campaign's form, see docs/annotation.md "Demographics"), the release's members who have answers
  in the report are counted per group under the release rule
  (`annotation.demographics.merge_small_groups`): groups of fewer than `min_group` annotators
  (`ReportOptions.min_group`, never below the release's, default 5) are merged into `other`, and
  further groups join `other` until it reaches `min_group` too.
- Per reported group: the group's labels are the majority of the group's answers per question
  (ties kept, questions without a group answer left out), and on them the report's headline figures
  with its bootstrap intervals (PST: overall STS per setting; GEP: score per setting) and the
  agreement of the group's answers (Fleiss' kappa, Krippendorff's alpha with a BCa interval over
  images, percent agreement). Under adaptive redundancy agreement counts only the group's answers
  among the first `min` answers of every question, as the overall agreement does
  (`metrics.sections.agreement.agreement_data`: later answers exist only where the first disagreed);
  the section's `agreement_basis` says which answers.
- Per pair of named groups of a field (not `other`, not `not reported`): the difference of each
  headline figure and of alpha, with a permutation test over annotators
  (`metrics.core.annotator_groups.permutation_test_groups`) and Holm-adjusted p-values over the pairs
  of the field. The tested figures are answer-level (every answer of a group counted as a label of
  its question; `unit: "answer"` in each test): majority figures give a permutation test without
  power (the core module's docstring). Alpha is the same in both (under adaptive redundancy its test
  shuffles annotators over the first-`min` answers, the headline test over every answer).

Reads only the `CampaignData` (its `demographics` come from the extraction); never the database.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from itertools import combinations
from typing import Any, cast

import numpy as np

from annotation.demographics import DEFAULT_MIN_GROUP, FIELDS, NOT_REPORTED, OTHER, group_of, merge_small_groups
from campaigns.spec import GEP_SETTINGS, PST, PST_SETTINGS
from metrics.core._arrays import distinct_values
from metrics.core.agreement_subsets import agreement_summary, alpha_interval
from metrics.core.annotator_groups import (
    HeadlineWithAlpha,
    alpha_stat,
    answers_prepared,
    gep_headline,
    group_statistic,
    members_mask,
    permutation_test_groups,
    pst_headline,
)
from metrics.core.report_warnings import DOMAIN_RULES, WarningLog, collecting, flag_domain
from metrics.core.significance import holm
from metrics.extract.data import CampaignData
from metrics.options import ReportOptions

from .agreement import agreement_data
from .gep import SettingRows, gep_section
from .labels import question_labels
from .pst import pst_section
from .report import register_section
from .types import AnnotatorsBlock, GepSettingName, PstSettingName

# The tests' statistic (issue 22): a ratio headline (PST STS) is tested on its studentized difference, which
# keeps the test's size when the groups differ in size and in the spread of their annotators
# (bench/validity.py annotators.*); the GEP score and alpha on the raw difference.
STUDENTIZED = "studentized: difference over its annotator-cluster-robust standard error"


def _flag_small_groups(field: str, tests: list[dict[str, Any]], members: Mapping[str, list[int]]) -> None:
    """The studentized STS test measured 7.2% at 5% (400 runs) with 5 annotators against 160 of unequal spread
    (`DOMAIN_RULES`): flag a field whose tests involve a group under the rule's size."""
    rule = DOMAIN_RULES["annotators.tests.small_group"]
    small = sorted({g for t in tests for g in (t["a"], t["b"]) if len(members[g]) < rule.threshold})
    if small:
        flag_domain("annotators.tests.small_group", f"annotators.fields.{field}.tests", groups=", ".join(small),
                    fewest=min(len(members[g]) for g in small))


def _f(x: Any) -> float | None:
    if x is None:
        return None
    value = float(x)
    return None if not np.isfinite(value) else value


def _metric_names(data: CampaignData) -> tuple[list[str], list[str]]:
    """(settings of the headline in order, metric keys: `sts_<setting>` / `gep_<setting>`)."""
    present = distinct_values(data.q_setting)
    if data.campaign.kind == PST:
        settings = [s for s in PST_SETTINGS if s in present]
        return settings, [f"sts_{s}" for s in settings]
    settings = [s for s in GEP_SETTINGS if s in present]
    return settings, [f"gep_{s}" for s in settings]


def _statistic(data: CampaignData, options: ReportOptions, settings: list[str], alpha: bool = True) -> Any:
    spec = data.campaign.spec
    if data.campaign.kind == PST:
        stereotype_of = {g["name"]: g["stereotype"] for g in spec["design"]["identities"]["groups"]}
        stereotypes = np.array([stereotype_of.get(g, "masculine") for g in data.q_meta["group"]], dtype=object)
        headline = pst_headline(data.choices, stereotypes, data.q_setting, settings, options.treatment,
                                unit="answer")
    else:
        genders = [g["name"] for g in spec["design"]["genders"]]
        headline = gep_headline(data.choices, data.q_meta["gender"], data.q_meta["attribute"], data.q_setting,
                                settings, genders[:2], options.gep_tie_policy, unit="answer")

    # Headline then alpha; answer-level headlines run the permutations vectorised (annotator_permutations,
    # annotator_alpha).
    return HeadlineWithAlpha(headline) if alpha else headline


def _group_figures(data: CampaignData, member: np.ndarray, options: ReportOptions, seed: int,
                   settings: list[str], agree: CampaignData, agree_member: np.ndarray,
                   gep_rows: dict[str, SettingRows]) -> dict[str, Any]:
    """The headline figures and agreement of one group's answers (labels: the group's majority). `gep_rows`:
    the section's memo of each GEP setting's questions, coded once for every group (`gep_section(rows=)`)."""
    rows = np.flatnonzero(member)  # once: each column taken by position, not masked again
    sub = dataclasses.replace(data, a_qidx=data.a_qidx[rows], a_annotator=data.a_annotator[rows],
                              a_code=data.a_code[rows], table=None,
                              a_arrival=None if data.a_arrival is None else data.a_arrival[rows])
    group_options = dataclasses.replace(options, aggregation="majority", n_perm=0)
    labels, ties = question_labels(sub, group_options)
    headline: dict[str, Any] = {}
    if data.campaign.kind == PST:
        # A group's own sections warn about the group's data under the report's top-level paths: their log
        # is kept apart (the group figures' own domain is the annotators rules'), not the report's.
        with warnings.catch_warnings(), collecting(WarningLog()):  # NaN figures of an undetermined group
            warnings.simplefilter("ignore", RuntimeWarning)
            pst_part = pst_section(sub, labels, ties, group_options, seed, headline=True)
        for s in settings:
            one = pst_part[cast(PstSettingName, s)]  # the spec's setting names are `str` to mypy
            headline[f"sts_{s}"] = {"value": one["overall"], "ci": one.get("overall_ci"),
                                    "ci_method": one.get("overall_ci_method")}
    else:
        with collecting(WarningLog()):
            gep_part = gep_section(sub, labels, ties, group_options, seed, headline=True, rows=gep_rows)
        for s in settings:
            part: Mapping[str, Any] = gep_part.get(cast(GepSettingName, s), {})
            headline[f"gep_{s}"] = {"value": part.get("score"), "ci": part.get("score_ci"),
                                    "ci_method": part.get("score_ci_method")}
    agree_rows = np.flatnonzero(agree_member)
    counts = dataclasses.replace(agree, a_qidx=agree.a_qidx[agree_rows], a_annotator=agree.a_annotator[agree_rows],
                                 a_code=agree.a_code[agree_rows], table=None, a_arrival=None).vote_counts()
    agreement = agreement_summary(counts)
    if options.n_boot > 0 and agreement["answers"]:
        # Drawn by pattern (`metrics.core.resampling`): the same distribution as drawing the images one by one,
        # one multinomial variate per distinct per-image pattern; each group draws over its own images, so no two
        # groups could share one multiplicity matrix (bench/README.md section 4: -21% of the section at 1M answers).
        ci = alpha_interval(counts, cluster_ids=data.q_image, n_boot=options.n_boot, confidence=options.confidence,
                            seed=seed, by_pattern=True)
        agreement["krippendorff_alpha_ci"] = [_f(ci.low), _f(ci.high)]
        agreement["krippendorff_alpha_ci_method"] = ci.method
    return {"headline": headline, "agreement": agreement, "questions_labelled": int((labels != "").sum())}


def _own_statistics(source: CampaignData, named: list[str], members: Mapping[str, list[int]],
                    stat: Any) -> dict[str, Any]:
    """Each named group's own statistic on `source`'s answers, once for all the pairs it is in (what
    `permutation_test_groups` would compute for each side: the same values)."""
    n_q, k = int(source.q_id.size), len(source.choices)
    return {g: group_statistic(source.a_qidx, source.a_annotator, source.a_code, n_q, k, members[g], stat)
            for g in named}


def annotators_section(data: CampaignData, options: ReportOptions, seed: int) -> AnnotatorsBlock:
    """The `annotators` section (see the module docstring)."""
    release = data.demographics_release
    settings, metrics = _metric_names(data)
    metric_keys = [*metrics, "krippendorff_alpha"]
    if release is None:  # no numbered release yet: no group is reported (docs/security.md)
        return {"release": None, "min_group": max(options.min_group, DEFAULT_MIN_GROUP), "annotators": 0,
                "reported": 0, "metrics": metric_keys, "fields": {},
                "note": "no demographics release yet (cut at the campaign's close, or on request once enough "
                        "annotators joined)"}
    min_group = max(options.min_group, int(release["min_group"]))  # raised, never lowered
    if release.get("stale"):  # a member withdrew since the release: today's groups would name them
        return {"release": {k: v for k, v in release.items() if k != "members"}, "min_group": min_group,
                "annotators": 0, "reported": 0, "metrics": metric_keys, "fields": {},
                "note": "a member of this release withdrew or changed their answers since it was cut: no group is "
                        "reported until the next release"}
    options = dataclasses.replace(options, min_group=min_group)
    released = set(release["members"])
    present = np.array([a for a in np.unique(data.a_annotator).tolist() if a in released], dtype=np.int64)
    answers_of = data.demographics
    stat = None  # built on the first permutation test (no named groups: no tests, no cost)
    prepared = None  # the answers by annotator, with the statistic: once for every field's pairs
    out: AnnotatorsBlock = {
        "release": {k: v for k, v in release.items() if k != "members"},
        "min_group": options.min_group, "annotators": int(present.size),
        "reported": int(sum(1 for a in present.tolist() if answers_of.get(a))),
        "metrics": metric_keys, "labels": "majority of the group's answers per question", "fields": {},
    }
    agree, basis = agreement_data(data)  # adaptive redundancy: the first `min` answers of every question
    adaptive = basis["design"] == "adaptive"
    out["agreement_basis"] = basis
    n_q, k = int(data.q_id.size), len(data.choices)
    gep_rows: dict[str, SettingRows] = {}  # every group's answers are to the same questions
    for field in FIELDS:
        merged, counts = merge_small_groups({a: group_of(answers_of.get(a), field) for a in present.tolist()},
                                            options.min_group)
        groups: dict[str, Any] = {}
        members: dict[str, list[int]] = {}
        for name, n in counts.items():
            if n is None:
                groups[name] = {"annotators": None, "suppressed": True}
                continue
            members[name] = [a for a, g in merged.items() if g == name]
            member = members_mask(data.a_annotator, members[name])
            groups[name] = {"annotators": n, "answers": int(member.sum())}
            if n < present.size:  # a group of every member: no figures of its own (they would follow)
                groups[name].update(_group_figures(data, member, options, seed, settings, agree,
                                                   members_mask(agree.a_annotator, members[name]), gep_rows))
        named = [g for g in members if g not in (OTHER, NOT_REPORTED)]
        tests: list[dict[str, Any]] = []
        if options.n_perm > 0 and len(named) > 1:
            stat = stat or _statistic(data, options, settings, alpha=not adaptive)
            prepared = prepared or answers_prepared(data.a_qidx, data.a_annotator, data.a_code, n_q, k, stat)
            own = _own_statistics(data, named, members, stat)
            own_alpha = _own_statistics(agree, named, members, alpha_stat) if adaptive else {}
            for a, b in combinations(named, 2):
                res = permutation_test_groups(data.a_qidx, data.a_annotator, data.a_code, n_q, k, members[a],
                                              members[b], stat, n_perm=options.n_perm, seed=seed,
                                              group_statistics=(own[a], own[b]), prepared=prepared)
                rows = [(res, i) for i in range(len(metrics) + (0 if adaptive else 1))]
                if adaptive:  # alpha on the first `min` answers of every question
                    ta = permutation_test_groups(agree.a_qidx, agree.a_annotator, agree.a_code, n_q, k, members[a],
                                                 members[b], alpha_stat, n_perm=options.n_perm, seed=seed,
                                                 group_statistics=(own_alpha[a], own_alpha[b]))
                    rows.append((ta, 0))
                for metric, (r, i) in zip(metric_keys, rows, strict=True):
                    tests.append({"a": a, "b": b, "metric": metric, "unit": "answer", "value_a": _f(r.a[i]),
                                  "value_b": _f(r.b[i]), "difference": _f(r.difference[i]),
                                  "p_value": _f(r.p_value[i]), "n_perm": r.n_perm,
                                  "statistic": STUDENTIZED if i < r.studentized else "difference"})
            for metric in metric_keys:
                family = [t for t in tests if t["metric"] == metric]
                adjusted = holm([np.nan if t["p_value"] is None else t["p_value"] for t in family])
                for t, p in zip(family, adjusted, strict=True):
                    t["p_holm"] = _f(p)
        _flag_small_groups(field, tests, members)
        out["fields"][field] = {"groups": groups, "tests": tests}
    out["null"] = ("annotators exchangeable between the two groups: each shuffle moves whole annotators with "
                   "all their answers, and each group's figure is recomputed from its answers (answer-level "
                   "statistics, no majority vote)")
    return out


def _build(data: CampaignData, labels: np.ndarray, ties: np.ndarray, options: ReportOptions,
           seed: int) -> AnnotatorsBlock | None:
    return annotators_section(data, options, seed) if data.a_annotator.size else None


register_section("annotators", _build)
