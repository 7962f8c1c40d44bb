"""The report's `gep` section (score, vector, frequencies per setting and template; distances from a
baseline gender with more than two), from `CampaignData` and the labels."""
from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class SettingRows:
    """What the GEP figures of one set of questions need besides their labels: the questions' images, the
    attributes present (in the design's order), the number of images and the rows' codes (genders,
    attributes, images; the texts themselves are not kept: at 10M answers they are ~0.4 GB). The same for
    every label vector over these questions: an annotators section computes it once per setting for all its
    groups (`gep_section(rows=...)`)."""

    images: np.ndarray
    present_attrs: list[str]
    codes: gep.RowCodes

    @property
    def n_images(self) -> int:
        return len(self.codes.i_ids)


def setting_rows(data: CampaignData, mask: np.ndarray, gender_order: list[str],
                 attribute_order: list[str]) -> SettingRows:
    genders, attributes, images = data.q_meta["gender"][mask], data.q_meta["attribute"][mask], data.q_image[mask]
    present_attrs = [a for a in attribute_order if (attributes == a).any()]
    codes = gep.row_codes(images, genders, attributes, gender_order[:2], present_attrs)
    return SettingRows(images, present_attrs, codes)


def _gep_setting(data: CampaignData, mask: np.ndarray, labels: np.ndarray, ties: np.ndarray,
                 gender_order: list[str], attribute_order: list[str], options: ReportOptions,
                 seed: int, context: bool = True, rows: SettingRows | None = None) -> GepSetting:
    """GEP figures of the questions in `mask` (one setting, or one template of a setting); `context`: with the
    score per context (`by_context`); `rows`: :func:`setting_rows` of `mask` when the caller has them."""
    rows = rows if rows is not None else setting_rows(data, mask, gender_order, attribute_order)
    lab, present_attrs = labels[mask], rows.present_attrs
    # The texts only where a figure reads them (the score per context); everything else reads the codes.
    genders: np.ndarray | None = None
    attributes: np.ndarray | None = None
    by_context: dict[str, float] = {}
    if context:
        genders, attributes = data.q_meta["gender"][mask], data.q_meta["attribute"][mask]
        by_context = gep.gep_by_context(data.q_meta["context"][mask], genders, attributes, lab, gender_order[:2],
                                        present_attrs, options.gep_tie_policy)
    # The frequencies once: the report's figures and their intervals read the same ones.
    fr = gep.attribute_frequencies(genders, attributes, lab, gender_order[:2], present_attrs, options.gep_tie_policy,
                                   rows.codes)
    rep = gep.gep_report(genders, attributes, lab, gender_order[:2], present_attrs, options.gep_tie_policy,
                         frequencies=fr)
    section: GepSetting = {
        "score": _f(rep["score"]),
        "vector": {a: _f(v) for a, v in rep["vector"].items()},
        "frequencies": {g: {a: _f(v) for a, v in row.items()} for g, row in rep["frequencies"].items()},
        "counts": rep["counts"],
        "by_context": {c: _f(v) for c, v in by_context.items()},
        "images": rows.n_images,
        "questions": int(mask.sum()),
        "ties": int(ties[mask].sum()),
        "unanswered": int((lab == "").sum()),
    }
    if not context:
        del section["by_context"]
    if options.n_boot > 0:
        section.update(gep_setting_intervals(
            images=rows.images, genders=genders, attributes=attributes, labels=lab,
            gender_order=gender_order, attribute_order=present_attrs, tie_policy=options.gep_tie_policy,
            n_boot=options.n_boot, confidence=options.confidence, seed=seed, frequencies=fr, codes=rows.codes))
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
                seed: int, headline: bool = False, rows: dict[str, SettingRows] | None = None) -> GepBlock:
    """The `gep` section. `headline`: per setting only the figures of :func:`_gep_setting` without `by_context`
    (the score and its interval among them: the same values), no templates or distances: what an annotator
    group's figures read (metrics/sections/annotators.py). `rows`: a memo of each setting's
    :func:`setting_rows`, filled on first use, for callers that build the section for several label vectors
    over the same questions (`data` sharing its question arrays: each annotator group's answers)."""
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
        known = rows.get(setting) if rows is not None else None
        if known is None:
            known = setting_rows(data, mask, gender_order, attribute_order)
            if rows is not None:
                rows[setting] = known
        section = _gep_setting(data, mask, labels, ties, gender_order, attribute_order, options, seed,
                               context=not headline, rows=known)
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
