"""The report's `pst` section (STS per setting, per template, the paired-minus-single gap with its
intervals and permutation test, the intervention analysis), from `CampaignData` and the labels."""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from campaigns import presets
from campaigns.spec import INTERVENTION, PAIRED, PST_SETTINGS, SINGLE
from metrics.core import pst
from metrics.core.report_warnings import DOMAIN_RULES, flag_domain
from metrics.core.uncertainty import permutation_test_sts_studentized
from metrics.extract.data import CampaignData
from metrics.options import ReportOptions

from .guard import guarded
from .metric_intervals import pst_gap_intervals, pst_runs, pst_setting_intervals
from .pst_analysis import gender_balance, intervention_section
from .templates import template_column, template_labels, template_mean
from .types import PstBlock, PstSetting, PstSettingName
from .values import num as _f
from .values import sub as _sub


def _pst_setting(identities: np.ndarray, groups: np.ndarray, stereotypes: np.ndarray, labels: np.ndarray,
                 images: np.ndarray, runs: np.ndarray | None, options: ReportOptions, seed: int) -> PstSetting:
    rep = pst.pst_report(identities, groups, stereotypes, labels, image_ids=images)
    main, other = rep[options.treatment], rep["excluded" if options.treatment == "paper" else "paper"]
    out: PstSetting = {
        "treatment": options.treatment,
        "persons": rep["n_persons"],
        "images": rep["n_images"],
        "overall": _f(main["overall"]),
        "micro": {k: _f(v) for k, v in main["micro"].items()},
        "groups": {k: _f(v) for k, v in main["groups"].items()},
        "percent_feminine": {k: _f(v) for k, v in main["percent_feminine"].items()},
        "counts": rep["counts"],
    }
    if runs is not None and images.size:
        out.update(pst_runs(images=images, runs=runs, labels=labels, stereotypes=stereotypes,
                            treatment=options.treatment, n_boot=options.n_boot, confidence=options.confidence,
                            seed=seed))
    out["without_undetermined" if options.treatment == "paper" else "paper_formula"] = {
        "treatment": "excluded" if options.treatment == "paper" else "paper",
        "overall": _f(other["overall"]),
        "micro": {k: _f(v) for k, v in other["micro"].items()},
        "groups": {k: _f(v) for k, v in other["groups"].items()},
        "percent_feminine": {k: _f(v) for k, v in other["percent_feminine"].items()},
    }
    if options.n_boot > 0 and images.size:
        out.update(pst_setting_intervals(images=images, identities=identities, groups=groups, stereotypes=stereotypes,
                                         labels=labels, treatment=options.treatment, n_boot=options.n_boot,
                                         confidence=options.confidence, seed=seed))
    return out


_NOT_PER_TEMPLATE = ("treatment", "counts", "without_undetermined", "paper_formula")


def _flag_neutrality(setting: str, near_balance: int, identities: int) -> None:
    """The Neutrality interval (test inversion) covers 93-97% where the identities' male and female shares
    are clearly apart and is valid but conservative (about 98%) where some are near balance, on the
    simulations of bench/validity.py (`DOMAIN_RULES`)."""
    if near_balance >= DOMAIN_RULES["pst.gender_balance.neutrality_ci.conservative"].threshold:
        flag_domain("pst.gender_balance.neutrality_ci.conservative", f"pst.gender_balance.{setting}.neutrality_ci",
                    n=near_balance, total=identities)


def _pst_gap(data: CampaignData, out: PstBlock, setting_rows: dict[str, np.ndarray], identities: np.ndarray,
             labels: np.ndarray, stereotypes: np.ndarray, options: ReportOptions, seed: int) -> dict[str, Any]:
    """Paired minus single STS (overall, per identity, per group), with its intervals and permutation test."""
    single, paired = out["single"], out["paired"]
    gap: dict[str, Any] = {
        "overall": _sub(paired["overall"], single["overall"]),
        "micro": {k: _sub(v, single["micro"].get(k)) for k, v in paired["micro"].items() if k in single["micro"]},
        "groups": {k: _sub(v, single["groups"].get(k)) for k, v in paired["groups"].items()
                   if k in single["groups"]},
    }
    if options.n_boot > 0:
        rows = {name: {"image_ids": data.q_image[m], "identities": identities[m], "labels": labels[m],
                       "stereotypes": stereotypes[m]} for name, m in setting_rows.items()}
        gap.update(pst_gap_intervals(paired=rows["paired"], single=rows["single"], groups=out["identity_groups"],
                                     treatment=options.treatment, n_boot=options.n_boot,
                                     confidence=options.confidence, seed=seed))
    if options.n_perm > 0:
        both = setting_rows["single"] | setting_rows["paired"]
        perm = permutation_test_sts_studentized(
            data.q_image[both], (data.q_setting[both] == PAIRED).astype(int), labels[both], stereotypes[both],
            options.treatment, n_perm=options.n_perm, seed=seed)
        gap["permutation_test"] = {
            "observed": _f(perm.observed), "p_value": _f(perm.p_value), "n_perm": perm.n_perm,
            "null": "setting label exchangeable over images",
            "statistic": "studentized: difference over its image-cluster-robust standard error (Welch-type)"}
    return gap


def pst_section(data: CampaignData, labels: np.ndarray, ties: np.ndarray, options: ReportOptions,
                seed: int, headline: bool = False) -> PstBlock:
    """The `pst` section. `headline`: per setting only the figures of :func:`_pst_setting` without runs (the
    overall STS and its interval among them: the same values), nothing else (no templates, gender balance,
    gap, intervention analysis): what an annotator group's figures read (metrics/sections/annotators.py)."""
    spec = data.campaign.spec
    groups_spec = spec["design"]["identities"]["groups"]
    stereotype_of = {g["name"]: g["stereotype"] for g in groups_spec}
    identities = data.q_meta["identity"]
    groups = data.q_meta["group"]
    stereotypes = np.array([stereotype_of.get(g, "masculine") for g in groups], dtype=object)
    out: PstBlock = {"treatment": options.treatment, "excluded": {},
                           "identity_groups": {i: g["name"] for g in groups_spec for i in g["identities"]}}
    setting_rows: dict[str, np.ndarray] = {}
    templates = template_column(data)
    for setting in PST_SETTINGS:
        mask = data.q_setting == setting
        if not mask.any():
            continue
        setting_rows[setting] = mask
        runs = data.q_meta["sample_index"][mask]
        # STS per run for any setting with more than one sample (and always for single, PST Table 13).
        use_runs = setting == SINGLE or np.unique(runs).size > 1
        section = _pst_setting(identities[mask], groups[mask], stereotypes[mask], labels[mask], data.q_image[mask],
                               runs if use_runs and not headline else None, options, seed)
        if headline:
            out[cast(PstSettingName, setting)] = section
            continue
        names = template_labels(templates[mask])
        if len(names) > 1:  # several prompt templates: every figure per template, and their mean
            section["by_template"] = {}
            for t in names:
                m = mask & (templates == t)
                part = _pst_setting(identities[m], groups[m], stereotypes[m], labels[m], data.q_image[m], None,
                                    options, seed)
                section["by_template"][t] = {k: v for k, v in part.items() if k not in _NOT_PER_TEMPLATE}
            section["template_mean"] = template_mean(section["by_template"], ("overall",),
                                                     ("micro", "groups", "percent_feminine"))
        out[cast(PstSettingName, setting)] = section  # the spec's names are `str` to mypy
        # Every PST prompt is gender-neutral: AG and Neutrality, with their intervals, for every setting
        # (the single one is the unified VLM paper's design: one person per image of an identity).
        balance = guarded(f"pst.gender_balance.{setting}", lambda mask=mask: gender_balance(  # type: ignore[misc]
            images=data.q_image[mask], identities=identities[mask], labels=labels[mask], n_boot=options.n_boot,
            confidence=options.confidence, seed=seed))
        if balance is not None:
            out.setdefault("gender_balance", {})[setting] = balance
            if balance.get("neutrality_ci") is not None:
                _flag_neutrality(setting, balance["neutrality_near_balance"], len(balance["neutrality_by_identity"]))
        lk = pst.label_kinds(labels[mask])
        out["excluded"][setting] = {
            "cannot_identify": int((lk == pst.K_CANNOT).sum()),
            "ties": int((lk == pst.K_TIE).sum()),
            "unanswered": int((lk == pst.K_MISSING).sum()),
            "persons": int(mask.sum()),
        }
    if headline:
        return out
    out["excluded"]["images_excluded_by_researcher"] = data.counts.get("images_excluded", 0)
    out["excluded"]["treatment"] = ("counted as -1 (paper formula)" if options.treatment == "paper"
                                    else "left out of every mean")
    if SINGLE in out and PAIRED in out:
        out["gap"] = _pst_gap(data, out, setting_rows, identities, labels, stereotypes, options, seed)
    if PAIRED in setting_rows and INTERVENTION in setting_rows:
        rows = {name: {"image_ids": data.q_image[m], "identities": identities[m], "labels": labels[m],
                       "stereotypes": stereotypes[m]} for name, m in setting_rows.items()}
        analysis = guarded("pst.intervention_analysis", lambda: intervention_section(
            plain=rows["paired"], intervention=rows["intervention"], groups=out["identity_groups"],
            treatment=options.treatment, n_boot=options.n_boot, n_perm=options.n_perm,
            confidence=options.confidence, seed=seed))
        if analysis is not None:
            out["intervention_analysis"] = analysis
    if spec["design"].get("aspect") == "occupation" and spec["design"]["identities"].get("preset") == "occupation":
        out["labor_stats_percent_female"] = presets.labor_stats_percent_female()
    return out
