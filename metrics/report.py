"""The campaign report: agreement, PST (STS) or GEP figures with bootstrap intervals.

Built from `CampaignData` arrays by the pure functions of `metrics.core`. Conventions:
- STS in percent (-100..100), GEP frequencies/vectors/scores as fractions; every figure a float
  (NaN becomes null in JSON).
- Every headline figure `<key>` has `<key>_ci` = [low, high]: a 95% percentile bootstrap over
  images (all questions of a resampled image come along), seeded, 1,000 draws by default.
- Labels per question: majority vote of its effective answers (ties kept as "tie" and counted), or
  Dawid-Skene (`aggregation="dawid_skene"`).
- PST: `treatment="paper"` counts "Cannot identify" and ties as -1 (the paper's formula);
  `"excluded"` drops them. Both are always computed: the other one is under `without_undetermined`
  (or `paper_formula`), and `pst.excluded` counts them.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from campaigns import presets
from metrics.core import aggregation, agreement, gep, pst
from metrics.core._arrays import index_in
from metrics.core.uncertainty import cluster_bootstrap_sums, permutation_test_sts

from .extract.data import CampaignData
from .options import AGGREGATIONS, GEP_TIE_POLICIES, TREATMENTS, ReportOptions

__all__ = ["AGGREGATIONS", "GEP_TIE_POLICIES", "TREATMENTS", "LabelTable", "ReportOptions", "label_table",
           "question_labels", "report_from_data"]


def _f(x: Any) -> float | None:
    """A JSON float (None for NaN / missing)."""
    if x is None:
        return None
    value = float(x)
    return None if math.isnan(value) or math.isinf(value) else value


def _ci(low: Any, high: Any) -> list[float | None]:
    return [_f(low), _f(high)]


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


def agreement_section(data: CampaignData) -> dict[str, Any]:
    counts = data.vote_counts()
    out: dict[str, Any] = {"overall": _agreement(counts), "by_setting": {}}
    for setting in sorted(set(data.q_setting.tolist())):
        mask = data.q_setting == setting
        # A campaign of one setting: the same questions as overall, computed once.
        out["by_setting"][setting] = dict(out["overall"]) if mask.all() else _agreement(counts[mask])
    return out


# ------------------------------------------------------------------------------ PST
def _cluster_cells(images: np.ndarray, cells: np.ndarray, n_cells: int, values: list[np.ndarray]) -> np.ndarray:
    """Per-image sums for bootstrap columns: column `2 * cell + v` holds sum of values[v] of the
    image's rows in that cell, plus one overall pair of columns first. One bincount per value."""
    img_codes = np.unique(images, return_inverse=True)[1]
    n_img = int(img_codes.max()) + 1 if img_codes.size else 0
    width = 2 * (n_cells + 1)
    out = np.zeros((n_img, width))
    for v, vals in enumerate(values):
        out[:, v] = np.bincount(img_codes, weights=vals, minlength=n_img)
        flat = np.bincount(img_codes * n_cells + cells, weights=vals, minlength=n_img * n_cells)
        out[:, 2 + v::2] = flat.reshape(n_img, n_cells)
    return out


def _pst_columns(identities: np.ndarray, s: np.ndarray, w: np.ndarray, names: list[str],
                 images: np.ndarray) -> np.ndarray:
    """Per-image sums of [s*w, w] overall, then per identity, for the vectorised bootstrap."""
    cells = np.searchsorted(np.asarray(names), identities)
    return _cluster_cells(images, cells, len(names), [s * w, w])


def _ratio_cols(t: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return 100.0 * t[:, 0::2] / t[:, 1::2]


def _pst_setting(identities: np.ndarray, groups: np.ndarray, stereotypes: np.ndarray, labels: np.ndarray,
                 images: np.ndarray, runs: np.ndarray | None, options: ReportOptions, seed: int,
                 group_members: dict[str, list[str]]) -> tuple[dict[str, Any], np.ndarray | None]:
    rep = pst.pst_report(identities, groups, stereotypes, labels, image_ids=images, runs=runs)
    main, other = rep[options.treatment], rep["excluded" if options.treatment == "paper" else "paper"]
    names = sorted(main["micro"])
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
    if "runs" in main:
        runs_sorted = sorted(main["runs"]["runs"].items())
        out["runs"] = [_f(v) for _, v in runs_sorted]
        out["run_ids"] = [int(k) + 1 for k, _ in runs_sorted]  # run n = sample index n-1
        out["runs_mean"] = _f(main["runs"]["mean"])
    out["without_undetermined" if options.treatment == "paper" else "paper_formula"] = {
        "treatment": "excluded" if options.treatment == "paper" else "paper",
        "overall": _f(other["overall"]),
        "micro": {k: _f(v) for k, v in other["micro"].items()},
        "groups": {k: _f(v) for k, v in other["groups"].items()},
        "percent_feminine": {k: _f(v) for k, v in other["percent_feminine"].items()},
    }
    draws = None
    if options.n_boot > 0 and images.size:
        s, w = pst.stereo_weights(labels, stereotypes, options.treatment)
        sums = _pst_columns(identities, s.astype(float), w.astype(float), names, images)
        iv, draws = cluster_bootstrap_sums(sums, _ratio_cols, n_boot=options.n_boot,
                                           confidence=options.confidence, seed=seed, return_draws=True)
        out["overall_ci"] = _ci(iv.low[0], iv.high[0])
        out["micro_ci"] = {n: _ci(iv.low[i + 1], iv.high[i + 1]) for i, n in enumerate(names)}
        # Group means are means of micro STS: take them per draw.
        alpha = (1 - options.confidence) / 2
        out["groups_ci"] = {}
        for g, members in group_members.items():
            idx = [names.index(m) + 1 for m in members if m in names]
            if idx:
                with warnings.catch_warnings():  # a draw where no identity of the group was counted
                    warnings.simplefilter("ignore", RuntimeWarning)
                    gd = np.nanmean(draws[:, idx], axis=1)
                lo, hi = np.nanpercentile(gd, [100 * alpha, 100 * (1 - alpha)])
                out["groups_ci"][g] = _ci(lo, hi)
        if runs is not None and "runs" in out:
            # Each run is a subset of images; CI of the mean of runs = CI of the overall when runs are equal.
            out["runs_mean_ci"] = out["overall_ci"]
    return out, draws


def pst_section(data: CampaignData, labels: np.ndarray, ties: np.ndarray, options: ReportOptions,
                seed: int) -> dict[str, Any]:
    spec = data.campaign.spec
    groups_spec = spec["design"]["identities"]["groups"]
    stereotype_of = {g["name"]: g["stereotype"] for g in groups_spec}
    group_members = {g["name"]: list(g["identities"]) for g in groups_spec}
    identities = data.q_meta["identity"]
    groups = data.q_meta["group"]
    stereotypes = np.array([stereotype_of.get(g, "masculine") for g in groups], dtype=object)
    out: dict[str, Any] = {"treatment": options.treatment, "excluded": {},
                           "identity_groups": {i: g["name"] for g in groups_spec for i in g["identities"]}}
    draws: dict[str, np.ndarray | None] = {}
    setting_rows: dict[str, np.ndarray] = {}
    for setting in ("single", "paired", "intervention"):
        mask = data.q_setting == setting
        if not mask.any():
            continue
        setting_rows[setting] = mask
        runs = data.q_meta["sample_index"][mask] if setting == "single" else None
        section, draws[setting] = _pst_setting(
            identities[mask], groups[mask], stereotypes[mask], labels[mask], data.q_image[mask], runs,
            options, seed, group_members)
        out[setting] = section
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
        ds, dp = draws.get("single"), draws.get("paired")
        if ds is not None and dp is not None:
            # Independent image resamples of the two settings: difference of the draws.
            alpha = (1 - options.confidence) / 2
            diff = dp[:, 0] - ds[:, 0]
            lo, hi = np.nanpercentile(diff, [100 * alpha, 100 * (1 - alpha)])
            gap["overall_ci"] = _ci(lo, hi)
        if options.n_perm > 0:
            both = setting_rows["single"] | setting_rows["paired"]
            perm = permutation_test_sts(data.q_image[both], (data.q_setting[both] == "paired").astype(int),
                                        labels[both], stereotypes[both], options.treatment,
                                        n_perm=options.n_perm, seed=seed)
            gap["permutation_test"] = {"observed": _f(perm.observed), "p_value": _f(perm.p_value),
                                       "n_perm": perm.n_perm, "null": "setting label exchangeable over images"}
        out["gap"] = gap
    if spec["design"].get("aspect") == "occupation" and spec["design"]["identities"].get("preset") == "occupation":
        out["labor_stats_percent_female"] = presets.labor_stats_percent_female()
    return out


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


# ------------------------------------------------------------------------------ GEP
def _gep_columns(genders: np.ndarray, attributes: np.ndarray, present: np.ndarray, counted: np.ndarray,
                 gender_order: list[str], attribute_order: list[str], images: np.ndarray) -> np.ndarray:
    """Per-image sums of [present, counted] per (gender, attribute) cell, genders 0 and 1 only,
    without the overall pair (dropped below)."""
    g = index_in(genders, gender_order[:2])
    a = index_in(attributes, attribute_order)
    keep = (g >= 0) & (a >= 0)
    cells = g[keep] * len(attribute_order) + a[keep]
    sums = _cluster_cells(images[keep], cells, 2 * len(attribute_order),
                          [present[keep].astype(float), counted[keep].astype(float)])
    return sums[:, 2:]


def _gep_stat(n_attr: int):  # type: ignore[no-untyped-def]
    def stat(t: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            f = t[:, 0::2] / t[:, 1::2]
        v = f[:, :n_attr] - f[:, n_attr:2 * n_attr]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            score = np.nanmean(np.abs(v), axis=1)
        return np.concatenate([score[:, None], v], axis=1)
    return stat


def gep_section(data: CampaignData, labels: np.ndarray, ties: np.ndarray, options: ReportOptions,
                seed: int) -> dict[str, Any]:
    design = data.campaign.spec["design"]
    gender_order = [g["name"] for g in design["genders"]]
    attribute_order = [a["name"] for a in design["attributes"]]
    out: dict[str, Any] = {"tie_policy": options.gep_tie_policy, "genders": gender_order,
                           "vector_definition": f"{gender_order[0]} minus {gender_order[1]}"}
    genders_all, attributes_all = data.q_meta["gender"], data.q_meta["attribute"]
    contexts_all = data.q_meta["context"]
    for setting in ("neutral", "explicit"):
        mask = (data.q_setting == setting) & np.isin(genders_all, gender_order[:2])
        if not mask.any():
            continue
        genders, attributes, lab = genders_all[mask], attributes_all[mask], labels[mask]
        present_attrs = [a for a in attribute_order if (attributes == a).any()]
        rep = gep.gep_report(genders, attributes, lab, gender_order[:2], present_attrs, options.gep_tie_policy)
        by_context = gep.gep_by_context(contexts_all[mask], genders, attributes, lab, gender_order[:2],
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
            present, counted, _ = gep.present_weights(lab, options.gep_tie_policy)
            sums = _gep_columns(genders, attributes, present, counted, gender_order, present_attrs,
                                data.q_image[mask])
            iv = cluster_bootstrap_sums(sums, _gep_stat(len(present_attrs)), n_boot=options.n_boot,
                                        confidence=options.confidence, seed=seed)
            section["score_ci"] = _ci(iv.low[0], iv.high[0])
            section["vector_ci"] = {a: _ci(iv.low[i + 1], iv.high[i + 1]) for i, a in enumerate(present_attrs)}
        out[setting] = section
    return out


# ------------------------------------------------------------------------------ whole report
def report_seed(data: CampaignData, options: ReportOptions) -> int:
    return options.seed if options.seed is not None else int(data.campaign.seed) & 0x7FFFFFFF


def report_from_data(data: CampaignData, options: ReportOptions,
                     labels: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """The report of the data; `labels` (label per question, is_tie per question) replaces the human
    majority (a machine labeller's labels for `?source=<labeller>`, metrics/report_sources.py)."""
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
        "agreement": agreement_section(data),
    }
    if campaign.kind == "pst":
        report["pst"] = pst_section(data, labels, ties, options, seed)
    else:
        report["gep"] = gep_section(data, labels, ties, options, seed)
    return report
