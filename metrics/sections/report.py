"""The campaign report: agreement, PST (STS) or GEP figures with bootstrap intervals.

Built from `CampaignData` arrays by the pure functions of `metrics.core`. Conventions:
- STS in percent (-100..100), GEP frequencies/vectors/scores as fractions; every figure a float
  (NaN becomes null in JSON).
- Every headline figure `<key>` has `<key>_ci` = [low, high] and `<key>_ci_method`: the method
  suited to the statistic (`metrics/sections/metric_intervals.py`: BCa over images for STS and their
  differences, Wilson with the design effect for shares of persons, test inversion for the GEP
  score, Newcombe for GEP components), seeded, 1,000 draws by default; every interval holds its
  estimate.
- Labels per question: majority vote of its effective answers (ties kept as "tie" and counted), or
  Dawid-Skene (`aggregation="dawid_skene"`).
- PST: `treatment="paper"` counts "Cannot identify" and ties as -1 (the paper's formula);
  `"excluded"` drops them. Both are always computed: the other one is under `without_undetermined`
  (or `paper_formula`), and `pst.excluded` counts them.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from campaigns import presets
from metrics.core import aggregation, agreement, gep, pst
from metrics.core.report_warnings import collecting, warn
from metrics.core.uncertainty import permutation_test_sts_studentized
from metrics.extract.data import CampaignData
from metrics.options import AGGREGATIONS, GEP_TIE_POLICIES, TREATMENTS, ReportOptions

from .agreement_subsets import agreement_subsets
from .amplification import amplification_section
from .gep_baseline import baseline_distances
from .metric_intervals import gep_setting_intervals, pst_gap_intervals, pst_runs, pst_setting_intervals
from .pst_analysis import gender_balance, intervention_section
from .templates import template_column, template_labels, template_mean
from .values import num as _f
from .values import sub as _sub

__all__ = ["AGGREGATIONS", "GEP_TIE_POLICIES", "TREATMENTS", "LabelTable", "ReportOptions", "label_table",
           "question_labels", "register_section", "report_from_data"]


# ------------------------------------------------------------------------------ guard
_log = logging.getLogger(__name__)


def guarded(path: str, build: Callable[[], Any]) -> Any:
    """`build()`, or None with a warning at `path` when it fails: a section that cannot be computed
    from the answers so far (a campaign in progress) leaves the rest of the report standing. The
    sections handle the states they know (tests/metrics/test_report_properties.py asserts no report
    of a random partial campaign needs this net); the error is logged."""
    try:
        return build()
    except (ValueError, ArithmeticError, IndexError, KeyError, TypeError) as exc:
        _log.exception("report section %s not computed", path)
        warn(path, f"not computed from the answers so far ({type(exc).__name__}: {exc})")
        return None


# ------------------------------------------------------------------------------ labels
def question_labels(data: CampaignData, options: ReportOptions) -> tuple[np.ndarray, np.ndarray]:
    """(label per question aligned with data.q_id, '' where unanswered), (is_tie per question)."""
    if data.a_qidx.size == 0:
        return np.full(data.q_id.size, "", dtype=str), np.zeros(data.q_id.size, dtype=bool)
    if options.aggregation == "dawid_skene":
        result = aggregation.dawid_skene(data.a_qidx, data.a_annotator, data.a_code, seed=options.seed or 0)
        labels = np.full(data.q_id.size, "", dtype=object)
        ties = np.zeros(data.q_id.size, dtype=bool)
        names = np.asarray(data.choices + [aggregation.TIE], dtype=object)
        codes = np.array([len(data.choices) if lab == aggregation.TIE else int(lab) for lab in result.labels])
        labels[result.item_ids.astype(np.int64)] = names[codes]
        ties[result.item_ids.astype(np.int64)] = result.is_tie
        return labels.astype(str), ties
    labels, ties = aggregation.majority_vote_from_counts(data.vote_counts(), data.choices, tie_policy="tie",
                                                         missing_value="")
    return labels.astype(str), ties


@dataclass(frozen=True)
class LabelTable:
    """The label of each question of the data (aligned with `data.q_id`), for labels.csv."""

    labels: np.ndarray  # str, '' where unanswered, "tie" for a tie
    ties: np.ndarray    # bool
    counts: np.ndarray  # questions x choices vote counts


def label_table(data: CampaignData, options: ReportOptions) -> LabelTable:
    labels, ties = question_labels(data, options)
    return LabelTable(labels, ties, data.vote_counts())


# ------------------------------------------------------------------------------ agreement
def _agreement(counts: np.ndarray) -> dict[str, Any]:
    """Agreement from a questions x choices count matrix (rows with no answers are ignored)."""
    answered = counts.sum(axis=1) > 0
    c = counts[answered]
    fleiss = agreement.fleiss_kappa_from_counts(c) if c.size else None
    alpha = agreement.krippendorff_alpha_from_counts(c) if c.size else None
    reason = (fleiss.reason or alpha.reason) if fleiss and alpha else None
    return {
        "fleiss_kappa": _f(fleiss.kappa) if fleiss else None,
        "fleiss_items_used": fleiss.items_used if fleiss else 0,
        "fleiss_raters_per_item": fleiss.raters_per_item if fleiss else 0,
        "krippendorff_alpha": _f(alpha.alpha) if alpha else None,
        "percent_agreement": _f(agreement.percent_agreement_from_counts(c)) if c.size else None,
        "questions": int(c.shape[0]),
        "answers": int(c.sum()),
        "note": reason,
    }


def agreement_data(data: CampaignData) -> tuple[CampaignData, dict[str, Any]]:
    """The answers agreement is computed on, and what the report says about it (`agreement.basis`).
    Fixed R: every answer. Adaptive redundancy: the first `min` answers of every question in order of
    arrival (a correction keeps its original's place), collected whatever the outcome; a question's
    later answers exist only because its first ones disagreed, so agreement over all of them (or over
    the questions with the modal count) is biased (Fleiss' kappa 1.000 against a true 0.90, issue 22).
    The scores use every answer (the majority of all of a question's answers)."""
    raw = (data.campaign.spec.get("annotation") or {}).get("redundancy")
    if not isinstance(raw, dict):
        return data, {"design": "fixed", "answers_per_question": None, "note": None}
    k = int(raw.get("min", 2))
    arrival = data.a_arrival
    if arrival is None or arrival.size != data.a_qidx.size:  # no arrival order known: the answers' own
        arrival = np.arange(data.a_qidx.size)
    order = np.argsort(arrival, kind="stable")
    keep = np.zeros(data.a_qidx.size, dtype=bool)
    keep[order] = agreement.first_answers(data.a_qidx[order], k)
    sub = dataclasses.replace(data, a_qidx=data.a_qidx[keep], a_annotator=data.a_annotator[keep],
                              a_code=data.a_code[keep],
                              a_arrival=arrival[keep])
    note = (f"Adaptive redundancy: agreement is computed on the first {k} answers of every question (in order "
            f"of arrival, collected whatever the outcome); later answers, asked for only where the first "
            f"disagreed, count in the labels but not here ({int(keep.sum())} of {keep.size} answers).")
    return sub, {"design": "adaptive", "answers_per_question": k, "answers_used": int(keep.sum()),
                 "answers_total": int(keep.size), "note": note}


def agreement_section(data: CampaignData) -> dict[str, Any]:
    counts = data.vote_counts()
    out: dict[str, Any] = {"overall": _agreement(counts), "by_setting": {}}
    for setting in sorted(set(data.q_setting.tolist())):
        mask = data.q_setting == setting
        # A campaign of one setting: the same questions as overall, computed once.
        out["by_setting"][setting] = dict(out["overall"]) if mask.all() else _agreement(counts[mask])
    return out


# ------------------------------------------------------------------------------ PST
def _pst_setting(identities: np.ndarray, groups: np.ndarray, stereotypes: np.ndarray, labels: np.ndarray,
                 images: np.ndarray, runs: np.ndarray | None, options: ReportOptions, seed: int) -> dict[str, Any]:
    rep = pst.pst_report(identities, groups, stereotypes, labels, image_ids=images)
    main, other = rep[options.treatment], rep["excluded" if options.treatment == "paper" else "paper"]
    out: dict[str, Any] = {
        "treatment": options.treatment,
        "persons": rep["n_persons"],
        "images": rep["n_images"],
        "overall": _f(main["overall"]),
        "micro": {k: _f(v) for k, v in main["micro"].items()},
        "groups": {k: _f(v) for k, v in main["groups"].items()},
        "percent_feminine": {k: _f(v) for k, v in main["percent_feminine"].items()},
        "counts": rep["counts"],
    }
    boot = {"n_boot": options.n_boot, "confidence": options.confidence, "seed": seed}
    if runs is not None and images.size:
        out.update(pst_runs(images=images, runs=runs, labels=labels, stereotypes=stereotypes,
                            treatment=options.treatment, **boot))
    out["without_undetermined" if options.treatment == "paper" else "paper_formula"] = {
        "treatment": "excluded" if options.treatment == "paper" else "paper",
        "overall": _f(other["overall"]),
        "micro": {k: _f(v) for k, v in other["micro"].items()},
        "groups": {k: _f(v) for k, v in other["groups"].items()},
        "percent_feminine": {k: _f(v) for k, v in other["percent_feminine"].items()},
    }
    if options.n_boot > 0 and images.size:
        out.update(pst_setting_intervals(images=images, identities=identities, groups=groups, stereotypes=stereotypes,
                                         labels=labels, treatment=options.treatment, **boot))
    return out


_NOT_PER_TEMPLATE = ("treatment", "counts", "without_undetermined", "paper_formula")


def pst_section(data: CampaignData, labels: np.ndarray, ties: np.ndarray, options: ReportOptions,
                seed: int) -> dict[str, Any]:
    spec = data.campaign.spec
    groups_spec = spec["design"]["identities"]["groups"]
    stereotype_of = {g["name"]: g["stereotype"] for g in groups_spec}
    identities = data.q_meta["identity"]
    groups = data.q_meta["group"]
    stereotypes = np.array([stereotype_of.get(g, "masculine") for g in groups], dtype=object)
    out: dict[str, Any] = {"treatment": options.treatment, "excluded": {},
                           "identity_groups": {i: g["name"] for g in groups_spec for i in g["identities"]}}
    setting_rows: dict[str, np.ndarray] = {}
    templates = template_column(data)
    for setting in ("single", "paired", "intervention"):
        mask = data.q_setting == setting
        if not mask.any():
            continue
        setting_rows[setting] = mask
        runs = data.q_meta["sample_index"][mask]
        # STS per run for any setting with more than one sample (and always for single, PST Table 13).
        use_runs = setting == "single" or np.unique(runs).size > 1
        section = _pst_setting(identities[mask], groups[mask], stereotypes[mask], labels[mask], data.q_image[mask],
                               runs if use_runs else None, options, seed)
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
        out[setting] = section
        if setting == "single":  # the unified VLM paper's design: one person per image of an identity
            balance = guarded("pst.gender_balance.single", lambda mask=mask: gender_balance(  # type: ignore[misc]
                images=data.q_image[mask], identities=identities[mask], labels=labels[mask], n_boot=options.n_boot,
                confidence=options.confidence, seed=seed))
            if balance is not None:
                out["gender_balance"] = {setting: balance}
        lk = pst.label_kinds(labels[mask])
        out["excluded"][setting] = {
            "cannot_identify": int((lk == pst.K_CANNOT).sum()),
            "ties": int((lk == pst.K_TIE).sum()),
            "unanswered": int((lk == pst.K_MISSING).sum()),
            "persons": int(mask.sum()),
        }
    out["excluded"]["images_excluded_by_researcher"] = data.counts.get("images_excluded", 0)
    out["excluded"]["treatment"] = ("counted as -1 (paper formula)" if options.treatment == "paper"
                                    else "left out of every mean")
    if "single" in out and "paired" in out:
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
                data.q_image[both], (data.q_setting[both] == "paired").astype(int), labels[both], stereotypes[both],
                options.treatment, n_perm=options.n_perm, seed=seed)
            gap["permutation_test"] = {
                "observed": _f(perm.observed), "p_value": _f(perm.p_value), "n_perm": perm.n_perm,
                "null": "setting label exchangeable over images",
                "statistic": "studentized: difference over its image-cluster-robust standard error (Welch-type)"}
        out["gap"] = gap
    if "paired" in setting_rows and "intervention" in setting_rows:
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


# ------------------------------------------------------------------------------ GEP
def _gep_setting(data: CampaignData, mask: np.ndarray, labels: np.ndarray, ties: np.ndarray,
                 gender_order: list[str], attribute_order: list[str], options: ReportOptions,
                 seed: int) -> dict[str, Any]:
    """GEP figures of the questions in `mask` (one setting, or one template of a setting)."""
    genders, attributes, lab = data.q_meta["gender"][mask], data.q_meta["attribute"][mask], labels[mask]
    present_attrs = [a for a in attribute_order if (attributes == a).any()]
    rep = gep.gep_report(genders, attributes, lab, gender_order[:2], present_attrs, options.gep_tie_policy)
    by_context = gep.gep_by_context(data.q_meta["context"][mask], genders, attributes, lab, gender_order[:2],
                                    present_attrs, options.gep_tie_policy)
    section: dict[str, Any] = {
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
    if options.n_boot > 0:
        section.update(gep_setting_intervals(
            images=data.q_image[mask], genders=genders, attributes=attributes, labels=lab,
            gender_order=gender_order, attribute_order=present_attrs, tie_policy=options.gep_tie_policy,
            n_boot=options.n_boot, confidence=options.confidence, seed=seed))
    return section


def gep_section(data: CampaignData, labels: np.ndarray, ties: np.ndarray, options: ReportOptions,
                seed: int) -> dict[str, Any]:
    design = data.campaign.spec["design"]
    gender_order = [g["name"] for g in design["genders"]]
    attribute_order = [a["name"] for a in design["attributes"]]
    out: dict[str, Any] = {"tie_policy": options.gep_tie_policy, "genders": gender_order,
                           "vector_definition": f"{gender_order[0]} minus {gender_order[1]}",
                           "genders_in_vector": gender_order[:2]}
    if len(gender_order) > 2:
        # GEP section 7: every other gender's distance from the baseline, under `distances` (none dropped).
        out["baseline_gender"] = design.get("baseline_gender") or gender_order[0]
    genders_all, attributes_all = data.q_meta["gender"], data.q_meta["attribute"]
    templates = template_column(data)
    for setting in ("neutral", "explicit"):
        mask = (data.q_setting == setting) & np.isin(genders_all, gender_order[:2])
        if not mask.any():
            continue
        section = _gep_setting(data, mask, labels, ties, gender_order, attribute_order, options, seed)
        names = template_labels(templates[mask])
        if len(names) > 1:  # several prompt templates: every figure per template, and their mean
            section["by_template"] = {}
            for t in names:
                part = _gep_setting(data, mask & (templates == t), labels, ties, gender_order, attribute_order,
                                    options, seed)
                section["by_template"][t] = {k: v for k, v in part.items() if k not in ("counts", "by_context")}
            section["template_mean"] = template_mean(section["by_template"], ("score",), ("vector",))
        out[setting] = section
        if len(gender_order) > 2:
            every = data.q_setting == setting
            out.setdefault("distances", {})[setting] = baseline_distances(
                images=data.q_image[every], genders=genders_all[every], attributes=attributes_all[every],
                labels=labels[every], baseline=out["baseline_gender"], gender_order=gender_order,
                attribute_order=[a for a in attribute_order if (attributes_all[every] == a).any()],
                tie_policy=options.gep_tie_policy, n_boot=options.n_boot, confidence=options.confidence, seed=seed)
    return out


# ------------------------------------------------------------------------------ further sections
# A section beyond agreement and the kind's own (e.g. `annotators`, metrics/sections/annotators.py) is a module
# that registers its builder here: (data, labels, ties, options, seed) -> the section, or None to leave
# it out. metrics/apps.py imports those modules; its renderer registers with metrics.render.registry.
SectionBuilder = Callable[[CampaignData, np.ndarray, np.ndarray, ReportOptions, int], "dict[str, Any] | None"]
_SECTION_BUILDERS: dict[str, SectionBuilder] = {}


def register_section(key: str, builder: SectionBuilder) -> SectionBuilder:
    """Add a report section builder (one per report key; computed in registration order)."""
    if _SECTION_BUILDERS.get(key, builder) is not builder:
        raise ValueError(f"a builder for report section {key!r} is registered already")
    _SECTION_BUILDERS[key] = builder
    return builder


# ------------------------------------------------------------------------------ whole report
def report_seed(data: CampaignData, options: ReportOptions) -> int:
    return options.seed if options.seed is not None else int(data.campaign.seed) & 0x7FFFFFFF


def report_from_data(data: CampaignData, options: ReportOptions,
                     labels: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """The report of the data; `labels` (label per question, is_tie per question) replaces the human
    majority (a machine labeller's labels for `?source=<labeller>`, metrics/sections/sources.py)."""
    with collecting() as log:
        report = _report_sections(data, options, labels)
    # Figures or sections left out or flagged, and why (metrics/core/report_warnings.py).
    report["warnings"] = log.as_list()
    return report


def _report_sections(data: CampaignData, options: ReportOptions,
                     labels: tuple[np.ndarray, np.ndarray] | None) -> dict[str, Any]:
    campaign = data.campaign
    seed = report_seed(data, options)
    labels, ties = question_labels(data, options) if labels is None else labels
    backend = campaign.spec.get("backend") or {}
    report: dict[str, Any] = {
        "campaign": {"id": campaign.pk, "name": campaign.name, "kind": campaign.kind, "status": campaign.status,
                     "backend": backend.get("name"), "model": backend.get("model"),
                     "synthetic": backend.get("name") == "placeholder"},
        "options": {**options.to_dict(), "seed": seed},
        "counts": {**data.counts, "ties": int(ties.sum()),
                   "questions_labelled": int((labels != "").sum())},
        "agreement": _agreement_block(data),
    }
    if campaign.kind == "pst":
        pst_part = guarded("pst", lambda: pst_section(data, labels, ties, options, seed))
        if pst_part is not None:
            report["pst"] = pst_part
        amplification = guarded("amplification", lambda: amplification_section(
            data, labels, label_source=f"human answers ({options.aggregation})", n_boot=options.n_boot,
            confidence=options.confidence, seed=seed))
        if amplification:
            report["amplification"] = amplification
    else:
        gep_part = guarded("gep", lambda: gep_section(data, labels, ties, options, seed))
        if gep_part is not None:
            report["gep"] = gep_part
    for key, build in _SECTION_BUILDERS.items():
        section = guarded(key, lambda build=build: build(data, labels, ties, options, seed))  # type: ignore[misc]
        if section is not None:
            report[key] = section
    return report


def _agreement_block(data: CampaignData) -> dict[str, Any]:
    sub, basis = agreement_data(data)
    if basis["note"]:
        warn("agreement", basis["note"])
    return {**agreement_section(sub), **agreement_subsets(sub), "basis": basis}


def redundancy_section(campaign: Any) -> dict[str, Any]:
    """{"redundancy": answers spent vs the fixed-R design} for a campaign with adaptive redundancy
    (`annotation.selectors.redundancy_spent`), else {} (the report keeps its shape)."""
    from annotation.redundancy import is_adaptive
    from annotation.selectors import redundancy_spent
    from annotation.spec_section import annotation_settings

    if not is_adaptive(annotation_settings(campaign)["redundancy"]):
        return {}
    return {"redundancy": redundancy_spent(campaign=campaign)}
