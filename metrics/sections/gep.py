"""The report's `gep` section (score, vector, frequencies per setting and template; distances from a
baseline gender with more than two), from `CampaignData` and the labels."""
from __future__ import annotations

from typing import cast

import numpy as np

from campaigns.spec import GEP_SETTINGS
from metrics.core import gep
from metrics.core.report_warnings import DOMAIN_RULES, flag_domain
from metrics.extract.data import CampaignData
from metrics.options import ReportOptions

from .gep_baseline import baseline_distances
from .metric_intervals import gep_setting_intervals
from .templates import template_column, template_labels, template_mean
from .types import GepBlock, GepSetting, GepSettingName
from .values import num as _f


def _gep_setting(data: CampaignData, mask: np.ndarray, labels: np.ndarray, ties: np.ndarray,
                 gender_order: list[str], attribute_order: list[str], options: ReportOptions,
                 seed: int, context: bool = True) -> GepSetting:
    """GEP figures of the questions in `mask` (one setting, or one template of a setting); `context`: with the
    score per context (`by_context`)."""
    genders, attributes, lab = data.q_meta["gender"][mask], data.q_meta["attribute"][mask], labels[mask]
    present_attrs = [a for a in attribute_order if (attributes == a).any()]
    # The frequencies once: the report's figures and their intervals read the same ones.
    fr = gep.attribute_frequencies(genders, attributes, lab, gender_order[:2], present_attrs, options.gep_tie_policy)
    rep = gep.gep_report(genders, attributes, lab, gender_order[:2], present_attrs, options.gep_tie_policy,
                         frequencies=fr)
    by_context = gep.gep_by_context(data.q_meta["context"][mask], genders, attributes, lab, gender_order[:2],
                                    present_attrs, options.gep_tie_policy) if context else {}
    section: GepSetting = {
        "score": _f(rep["score"]),
        "vector": {a: _f(v) for a, v in rep["vector"].items()},
        "frequencies": {g: {a: _f(v) for a, v in row.items()} for g, row in rep["frequencies"].items()},
        "counts": rep["counts"],
        "by_context": {c: _f(v) for c, v in by_context.items()},
        "images": int(np.unique(data.q_image[mask]).size),
        "questions": int(mask.sum()),
        "ties": int(ties[mask].sum()),
        "unanswered": int((lab == "").sum()),
    }
    if not context:
        del section["by_context"]
    if options.n_boot > 0:
        section.update(gep_setting_intervals(
            images=data.q_image[mask], genders=genders, attributes=attributes, labels=lab,
            gender_order=gender_order, attribute_order=present_attrs, tie_policy=options.gep_tie_policy,
            n_boot=options.n_boot, confidence=options.confidence, seed=seed, frequencies=fr))
    return section


def _flag_sparse(setting: str, section: GepSetting) -> None:
    """Attributes with few present questions for a gender: their Wilson / Newcombe intervals and the score's
    test inversion are valid but conservative there (bench/validity.py gep.*; DOMAIN_RULES)."""
    rule = DOMAIN_RULES["gep.sparse.conservative"]
    counts = section["counts"]
    attrs = sorted({a for row in counts.values() for a in row})
    few = [a for a in attrs if min(row.get(a, {}).get("present", 0) for row in counts.values()) < rule.threshold]
    if few:
        flag_domain("gep.sparse.conservative", f"gep.{setting}", n=len(few), total=len(attrs))


def gep_section(data: CampaignData, labels: np.ndarray, ties: np.ndarray, options: ReportOptions,
                seed: int, headline: bool = False) -> GepBlock:
    """The `gep` section. `headline`: per setting only the figures of :func:`_gep_setting` without `by_context`
    (the score and its interval among them: the same values), no templates or distances: what an annotator
    group's figures read (metrics/sections/annotators.py)."""
    design = data.campaign.spec["design"]
    gender_order = [g["name"] for g in design["genders"]]
    attribute_order = [a["name"] for a in design["attributes"]]
    out: GepBlock = {"tie_policy": options.gep_tie_policy, "genders": gender_order,
                           "vector_definition": f"{gender_order[0]} minus {gender_order[1]}",
                           "genders_in_vector": gender_order[:2]}
    if len(gender_order) > 2:
        # GEP section 7: every other gender's distance from the baseline, under `distances` (none dropped).
        out["baseline_gender"] = design.get("baseline_gender") or gender_order[0]
    genders_all, attributes_all = data.q_meta["gender"], data.q_meta["attribute"]
    templates = template_column(data)
    for setting in GEP_SETTINGS:
        mask = (data.q_setting == setting) & np.isin(genders_all, gender_order[:2])
        if not mask.any():
            continue
        section = _gep_setting(data, mask, labels, ties, gender_order, attribute_order, options, seed,
                               context=not headline)
        if headline:
            out[cast(GepSettingName, setting)] = section
            continue
        if "score_ci" in section:
            _flag_sparse(str(setting), section)
        names = template_labels(templates[mask])
        if len(names) > 1:  # several prompt templates: every figure per template, and their mean
            section["by_template"] = {}
            for t in names:
                part = _gep_setting(data, mask & (templates == t), labels, ties, gender_order, attribute_order,
                                    options, seed)
                section["by_template"][t] = {k: v for k, v in part.items() if k not in ("counts", "by_context")}
            section["template_mean"] = template_mean(section["by_template"], ("score",), ("vector",))
        out[cast(GepSettingName, setting)] = section  # the spec's names are `str` to mypy
        if len(gender_order) > 2:
            every = data.q_setting == setting
            out.setdefault("distances", {})[setting] = baseline_distances(
                images=data.q_image[every], genders=genders_all[every], attributes=attributes_all[every],
                labels=labels[every], baseline=out["baseline_gender"], gender_order=gender_order,
                attribute_order=[a for a in attribute_order if (attributes_all[every] == a).any()],
                tie_policy=options.gep_tie_policy, n_boot=options.n_boot, confidence=options.confidence, seed=seed)
    return out
