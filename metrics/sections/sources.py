"""Reports from other label sources (issue 15): `?source=<labeller>` (the PST / GEP sections computed
from a machine labeller's labels instead of the human majority) and `?source=hybrid:<labeller>` (the
human report plus prediction-powered estimates from the human sample and the machine labels).

Both add `source`, `auto.<labeller>` (agreement with the human majority: `metrics.core.machine`;
for GEP the machine vector and score against the human ones) and, for GEP, `clipscore` per setting.
The hybrid source adds `hybrid.<labeller>` (`metrics.core.hybrid`). The human report is
`report_from_data` unchanged. Pure: computed from `CampaignData` and `MachineData`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, cast

import numpy as np
from scipy import stats

from campaigns.spec import GEP, GEP_SETTINGS, PST_SETTINGS
from metrics.core import gep, hybrid, hybrid_intervals, machine, pst
from metrics.core._arrays import distinct_values, index_in
from metrics.core.report_warnings import DOMAIN_RULES, collecting, flag_domain
from metrics.extract.data import CampaignData
from metrics.extract.machine import MachineData
from metrics.options import ReportOptions

from .gep import gep_section
from .labels import question_labels
from .report import report_from_data, report_seed
from .types import GepSettingName
from .values import num as _f


def source_report(data: CampaignData, mdata: MachineData | None, options: ReportOptions) -> dict[str, Any]:
    if options.labeller is None or mdata is None:
        return report_from_data(data, options)
    with collecting() as log:  # the hybrid and machine sections' warnings join the report's
        report = _source_report(data, mdata, options)
    report["warnings"] = log.as_list()
    return report


def _source_report(data: CampaignData, mdata: MachineData, options: ReportOptions) -> dict[str, Any]:
    seed = report_seed(data, options)
    human_labels, human_ties = question_labels(data, options)
    m_labels, m_ties = mdata.choice, np.zeros(data.q_id.size, dtype=bool)
    if options.is_hybrid:
        report = report_from_data(data, options, labels=(human_labels, human_ties))
    else:
        report = report_from_data(data, options, labels=(m_labels, m_ties))
    report["source"] = {"name": options.source, "kind": "hybrid" if options.is_hybrid else "machine",
                        "labeller": mdata.labeller, "model": mdata.model,
                        "questions_labelled": int((m_labels != "").sum())}
    auto: dict[str, Any] = {"agreement": agreement_section(data, human_labels, mdata, options, seed)}
    if data.campaign.kind == GEP:
        auto["gep"] = gep_comparison(data, human_labels, human_ties, mdata, options, seed)
        report["clipscore"] = clipscore_section(data, mdata)
    report["auto"] = {mdata.labeller: auto}
    if options.is_hybrid:
        report["hybrid"] = {mdata.labeller: hybrid_section(data, human_labels, mdata, options, seed)}
    return report


# ------------------------------------------------------------------------------ agreement
def agreement_section(data: CampaignData, human: np.ndarray, mdata: MachineData, options: ReportOptions,
                      seed: int) -> dict[str, Any]:
    """Per setting: agreement with the human majority (PST Table 12); GEP also per attribute (Table 16)
    with the mean ROC-AUC (Table 7)."""
    out: dict[str, Any] = {"overall": machine.label_agreement(
        human, mdata.choice, data.q_image, score=mdata.score, positive=_positive(mdata), n_boot=options.n_boot,
        confidence=options.confidence, seed=seed), "by_setting": {}}
    is_gep = data.campaign.kind == GEP
    for setting in sorted(distinct_values(data.q_setting)):
        m = data.q_setting == setting
        kw = dict(score=mdata.score[m], positive=_positive(mdata, m), n_boot=options.n_boot,
                  confidence=options.confidence, seed=seed)
        if is_gep:
            res = machine.agreement_by_group(human[m], mdata.choice[m], data.q_image[m],
                                             data.q_meta["attribute"][m], **kw)
            out["by_setting"][setting] = {**res["overall"], "attributes": res["groups"],
                                          "roc_auc_mean": res["roc_auc_mean"],
                                          "roc_auc_mean_ci": res["roc_auc_mean_ci"],
                                          "roc_auc_mean_ci_method": res["roc_auc_mean_ci_method"]}
        else:
            out["by_setting"][setting] = machine.label_agreement(human[m], mdata.choice[m], data.q_image[m], **kw)
    if is_gep:  # GEP Tables 7 and 16: each attribute's ROC-AUC pooled over both settings (320 images per model)
        res = machine.agreement_by_group(human, mdata.choice, data.q_image, data.q_meta["attribute"],
                                         score=mdata.score, positive=_positive(mdata), n_boot=options.n_boot,
                                         confidence=options.confidence, seed=seed)
        out["pooled_settings"] = {**res["overall"], "attributes": res["groups"], "roc_auc_mean": res["roc_auc_mean"],
                                  "roc_auc_mean_ci": res["roc_auc_mean_ci"],
                                  "roc_auc_mean_ci_method": res["roc_auc_mean_ci_method"],
                                  "settings": sorted(distinct_values(data.q_setting))}
    # Issue 22: say what the machine is compared with. The PST paper's VQA-vs-human kappa is "averaged"
    # (over annotators, each against the machine); this one is against each question's majority label.
    out["basis"] = ("machine label vs the human majority label of each question (one kappa over questions); "
                    "not the PST paper's kappa averaged over annotators")
    return out


def _positive(mdata: MachineData, mask: np.ndarray | None = None) -> str | None:
    """The questions' first choice (what `score` is the probability of), when they share one."""
    pos = mdata.positive if mask is None else mdata.positive[mask]
    values = {p for p in pos.tolist() if p}
    return values.pop() if len(values) == 1 else None


# ------------------------------------------------------------------------------ GEP vectors
RAW_BASIS = {"clip": "cos", "clip_cc": "diff"}


def _score_vector(data: CampaignData, mdata: MachineData, mask: np.ndarray, gender_order: list[str],
                  attributes: list[str], values: np.ndarray | None = None) -> dict[str, float | None] | None:
    """GEP vector from the machine's scores (mean score per gender and attribute, GEP's C-f_a /
    CLS-f_a), when every question of the setting has one; `values` replaces the scores (the raw
    cos / diff of GEP_C / GEP_CC, the paper's scale)."""
    s = (mdata.score if values is None else values)[mask]
    if s.size == 0 or not np.isfinite(s).all():
        return None
    g, a = data.q_meta["gender"][mask], data.q_meta["attribute"][mask]
    out: dict[str, float | None] = {}
    for attr in attributes:
        f = [s[(g == gender) & (a == attr)] for gender in gender_order[:2]]
        out[attr] = _f(f[0].mean() - f[1].mean()) if f[0].size and f[1].size else None
    return out


def gep_comparison(data: CampaignData, human: np.ndarray, ties: np.ndarray, mdata: MachineData,
                   options: ReportOptions, seed: int) -> dict[str, Any]:
    """`auto.<labeller>.gep.<setting>`: the machine's score and vector and, against the human vector,
    Kendall tau-b, sign MCC and Pearson r (GEP Tables 4, 19). `basis`: "cos" / "diff" for GEP_C /
    GEP_CC when every question of the setting has its raw similarity (the paper's eq. 4 / 5 scale:
    mean cos or cos difference per gender and attribute), else "scores" when the labeller gave a score
    on every question (the vector of mean scores, as GEP's CLS-f_a), else "labels" (the GEP section
    of the machine labels)."""
    quiet = dataclasses.replace(options, n_boot=0, n_perm=0)
    human_sec = gep_section(data, human, ties, quiet, seed)
    machine_sec = gep_section(data, mdata.choice, np.zeros(human.size, dtype=bool), quiet, seed)
    gender_order = human_sec["genders"]
    out: dict[str, Any] = {}
    for setting in GEP_SETTINGS:
        if setting not in human_sec or setting not in machine_sec:
            continue
        key = cast(GepSettingName, setting)  # the spec's names are `str` to mypy
        attrs = list(human_sec[key]["vector"])
        mask = (data.q_setting == setting) & np.isin(data.q_meta["gender"], gender_order[:2])
        by_raw = (_score_vector(data, mdata, mask, gender_order, attrs, mdata.raw)
                  if mdata.raw is not None and RAW_BASIS.get(mdata.labeller) else None)
        by_scores = by_raw if by_raw is not None else _score_vector(data, mdata, mask, gender_order, attrs)
        vector = by_scores if by_scores is not None else machine_sec[key]["vector"]
        values = [v for v in vector.values() if v is not None]
        score = float(np.mean(np.abs(values))) if values else None
        basis = RAW_BASIS[mdata.labeller] if by_raw is not None else "scores" if by_scores is not None else "labels"
        out[setting] = {"basis": basis, "score": _f(score),
                        "vector": vector, "human_score": human_sec[key]["score"],
                        "human_vector": human_sec[key]["vector"],
                        "label_score": machine_sec[key]["score"],
                        **machine.vector_agreement(vector, human_sec[key]["vector"], attrs)}
    return out


CS_PAPER_SCALE = 100.0 / 2.5  # stored CLIPScore 2.5 * cos -> GEP Table 3's 100 * cos


def clipscore_section(data: CampaignData, mdata: MachineData) -> dict[str, Any]:
    """Mean CLIPScore per setting (GEP Table 3's image-text alignment reference) with a t interval over
    images; images the report leaves out (excluded) are left out here too."""
    keep = set(np.unique(data.q_image).tolist())
    out: dict[str, Any] = {}
    for setting in GEP_SETTINGS:
        rows = [r for r in mdata.clipscore if r["setting"] == setting and r["image"] in keep]
        if not rows:
            continue
        v = np.array([r["score"] for r in rows], dtype=float)
        ci = stats.t.interval(0.95, v.size - 1, loc=v.mean(), scale=stats.sem(v)) if v.size > 1 else (None, None)
        k = CS_PAPER_SCALE
        out[setting] = {"mean": _f(v.mean()), "ci": [_f(ci[0]), _f(ci[1])], "images": int(v.size),
                        "models": sorted({r["model"] for r in rows}),
                        "cs_100cos": {"mean": _f(k * v.mean()), "ci": [_f(None if ci[0] is None else k * ci[0]),
                                                                      _f(None if ci[1] is None else k * ci[1])],
                                      "definition": "100 * cos(image, prompt): GEP Table 3's CS column (from the "
                                                    "stored 2.5 * max(cos, 0); a negative cos counts as 0)"}}
    return out


# ------------------------------------------------------------------------------ hybrid
# A question the machine failed to label gets a fixed value, so that every question has one (issue 22,
# defect 5): PST "Cannot identify" (coded as the report codes it), GEP "No" (absent).
MACHINE_FAILED = {"pst": "Cannot identify", "gep": "No"}


def machine_values(data: CampaignData, mdata: MachineData) -> np.ndarray:
    """The machine's label per question, a failed (missing) label replaced by the fixed one."""
    fixed = MACHINE_FAILED["gep" if data.campaign.kind == GEP else "pst"]
    return np.where(mdata.choice == "", fixed, mdata.choice).astype(object)


def _split(human: np.ndarray, mdata: MachineData) -> tuple[np.ndarray, np.ndarray]:
    """(labeled, unlabeled) questions: with a recorded human sample, the sampled images' questions
    with a human label (a tie included: the report codes it) / every question of the other images;
    without one, questions with / without a human label (then PPI assumes the answered questions are
    a random subset: said in `sample`). Every question has a machine value (`machine_values`), so
    the hybrid estimates the human report's own quantity (issue 22, defect 5)."""
    has_h = human != ""
    if mdata.sample_active:
        return mdata.sampled & has_h, ~mdata.sampled
    return has_h, ~has_h


def _freq(num_h: np.ndarray, den_h: np.ndarray, num_m: np.ndarray, den_m: np.ndarray, lab: np.ndarray,
          unl: np.ndarray, confidence: float, scale: float = 1.0, proportion: bool = True) -> dict[str, Any]:
    return hybrid_intervals.hybrid_share(num_h[lab], den_h[lab], num_m[lab], den_m[lab], num_m[unl], den_m[unl],
                                         confidence, scale, proportion)


def _difference(a: dict[str, Any], b: dict[str, Any], counts: tuple[float, float, float, float],
                confidence: float) -> dict[str, Any]:
    return hybrid_intervals.hybrid_difference(a, b, counts, confidence)


def _image_rows(images: np.ndarray, cells: np.ndarray, n_cells: int, cols: list[np.ndarray], keep: np.ndarray
                ) -> np.ndarray:
    """Per-image sums of each value column per cell, for the images of the kept rows."""
    img = np.unique(images[keep], return_inverse=True)[1]
    n_img = int(img.max()) + 1 if img.size else 0
    out = np.zeros((n_img, n_cells * len(cols)))
    for j, col in enumerate(cols):
        np.add.at(out, (img, j * n_cells + cells[keep]), col[keep].astype(float))
    return out


def hybrid_section(data: CampaignData, human: np.ndarray, mdata: MachineData, options: ReportOptions,
                   seed: int) -> dict[str, Any]:
    lab, unl = _split(human, mdata)
    out: dict[str, Any] = {
        "sample": {"kind": "human_sample" if mdata.sample_active else "answered questions (not a random sample)",
                   "human_questions": int(lab.sum()), "machine_only_questions": int(unl.sum()),
                   "human_images": int(np.unique(data.q_image[lab]).size),
                   "machine_only_images": int(np.unique(data.q_image[unl]).size)},
        "methods": {**hybrid.METHODS, "sparse": hybrid_intervals.SPARSE_METHODS,
                    "machine_failed": MACHINE_FAILED[data.campaign.kind if data.campaign.kind == GEP else "pst"]}, "confidence": options.confidence}
    if data.campaign.kind == GEP:
        out.update(_gep_hybrid(data, human, mdata, lab, unl, options, seed))
    else:
        out.update(_pst_hybrid(data, human, mdata, lab, unl, options))
    return out


def _gep_hybrid(data: CampaignData, human: np.ndarray, mdata: MachineData, lab: np.ndarray, unl: np.ndarray,
                options: ReportOptions, seed: int) -> dict[str, Any]:
    design = data.campaign.spec["design"]
    genders = [g["name"] for g in design["genders"]][:2]
    attr_order = [a["name"] for a in design["attributes"]]
    g_all, a_all = data.q_meta["gender"], data.q_meta["attribute"]
    ph, ch, _ = gep.present_weights(human, options.gep_tie_policy)
    pm, cm, _ = gep.present_weights(machine_values(data, mdata), options.gep_tie_policy)
    out: dict[str, Any] = {}
    for setting in GEP_SETTINGS:
        mask = (data.q_setting == setting) & np.isin(g_all, genders)
        if not mask.any():
            continue
        attrs = [a for a in attr_order if ((a_all == a) & mask).any()]
        freqs: dict[str, dict[str, Any]] = {g: {} for g in genders}
        counts: dict[str, dict[str, tuple[float, float]]] = {g: {} for g in genders}
        for g in genders:
            for a in attrs:
                cell = mask & (g_all == g) & (a_all == a)
                freqs[g][a] = _freq(ph, ch, pm, cm, cell & lab, cell & unl, options.confidence)
                counts[g][a] = (float(ph[cell & lab].sum()), float(ch[cell & lab].sum()))
        vector = {a: _difference(freqs[genders[0]][a], freqs[genders[1]][a],
                                 (*counts[genders[0]][a], *counts[genders[1]][a]), options.confidence)
                  for a in attrs}
        cells = np.where(g_all == genders[0], 0, 1) * len(attrs) + np.maximum(index_in(a_all, attrs), 0)
        n_cells = 2 * len(attrs)
        keep_h, keep_u = mask & lab, mask & unl
        rows_h = _image_rows(data.q_image, cells, n_cells, [ph, ch], keep_h)
        rows_m = _image_rows(data.q_image, cells, n_cells, [pm, cm], keep_h)
        rows_u = _image_rows(data.q_image, cells, n_cells, [pm, cm], keep_u)
        score = hybrid_intervals.ppi_gep_score(rows_h, rows_m, rows_u, len(attrs), n_boot=options.n_boot,
                                               confidence=options.confidence, seed=seed)
        out[setting] = {"frequencies": freqs, "vector": {a: vector[a] for a in attrs}, "score": score}
        fewest = min(int(np.unique(data.q_image[keep_h & (g_all == g)]).size) for g in genders)
        has_ci = (score.get("ci") or [None])[0] is not None
        if has_ci and fewest < DOMAIN_RULES["hybrid.gep_score.conservative"].threshold:
            flag_domain("hybrid.gep_score.conservative", f"hybrid.{mdata.labeller}.{setting}.score", fewest=fewest)
        _warn_sparse(f"hybrid.{mdata.labeller}.{setting}",
                     [f for g in genders for f in freqs[g].values()] + list(vector.values()))
    return out


def _warn_sparse(path: str, results: list[dict[str, Any]]) -> None:
    """A warning when some shares fell back to the human interval (outside PPI's validity domain)."""
    sparse = sum(1 for r in results if r.get("sparse"))
    if sparse:
        flag_domain("hybrid.frequency.wilson_fallback", path, n=sparse, total=len(results))


def _pst_hybrid(data: CampaignData, human: np.ndarray, mdata: MachineData, lab: np.ndarray, unl: np.ndarray,
                options: ReportOptions) -> dict[str, Any]:
    spec = data.campaign.spec
    stereotype_of = {g["name"]: g["stereotype"] for g in spec["design"]["identities"]["groups"]}
    stereotypes = np.array([stereotype_of.get(g, "masculine") for g in data.q_meta["group"]], dtype=object)
    identities = data.q_meta["identity"]
    sh, wh = (x.astype(float) for x in pst.stereo_weights(human, stereotypes, options.treatment))
    m_choice = machine_values(data, mdata)
    sm, wm = (x.astype(float) for x in pst.stereo_weights(m_choice, stereotypes, options.treatment))
    fem_h = (pst.label_kinds(human) == pst.K_FEM).astype(float)
    fem_m = (pst.label_kinds(m_choice) == pst.K_FEM).astype(float)
    conf = options.confidence
    out: dict[str, Any] = {}
    for setting in PST_SETTINGS:
        mask = data.q_setting == setting
        if not mask.any():
            continue
        names = sorted(set(identities[mask].tolist()))
        cells = np.zeros(data.q_id.size, dtype=np.int64)
        rows = [_image_rows(data.q_image, cells, 1, [s * w, w], mask & keep)
                for s, w, keep in ((sh, wh, lab), (sm, wm, lab), (sm, wm, unl))]
        overall = hybrid.ppi_ratio(rows[0][:, 0], rows[0][:, 1], rows[1][:, 0], rows[1][:, 1], rows[2][:, 0],
                                   rows[2][:, 1], conf, scale=100.0)
        micro, feminine = {}, {}
        for ident in names:
            cell = mask & (identities == ident)
            micro[ident] = _freq(sh * wh, wh, sm * wm, wm, cell & lab, cell & unl, conf, scale=100.0,
                                 proportion=False)
            feminine[ident] = _freq(fem_h, wh if options.treatment == "excluded" else (human != "").astype(float),
                                    fem_m, wm if options.treatment == "excluded" else np.ones(m_choice.size),
                                    cell & lab, cell & unl, conf, scale=100.0)
        out[setting] = {"overall": overall, "micro": micro, "percent_feminine": feminine}
        _warn_sparse(f"hybrid.{mdata.labeller}.{setting}", list(feminine.values()))
    return out
