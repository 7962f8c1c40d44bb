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
from typing import Any

import numpy as np
from scipy import stats

from metrics.core import gep, hybrid, machine, pst
from metrics.core._arrays import index_in
from metrics.core.report_warnings import collecting
from metrics.extract.data import CampaignData
from metrics.extract.machine import MachineData
from metrics.options import ReportOptions

from .report import _f, gep_section, question_labels, report_from_data, report_seed


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
    if data.campaign.kind == "gep":
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
    is_gep = data.campaign.kind == "gep"
    for setting in sorted(set(data.q_setting.tolist())):
        m = data.q_setting == setting
        kw = dict(score=mdata.score[m], positive=_positive(mdata, m), n_boot=options.n_boot,
                  confidence=options.confidence, seed=seed)
        if is_gep:
            res = machine.agreement_by_group(human[m], mdata.choice[m], data.q_image[m],
                                             data.q_meta["attribute"][m], **kw)
            out["by_setting"][setting] = {**res["overall"], "attributes": res["groups"],
                                          "roc_auc_mean": res["roc_auc_mean"],
                                          "roc_auc_mean_ci": res["roc_auc_mean_ci"]}
        else:
            out["by_setting"][setting] = machine.label_agreement(human[m], mdata.choice[m], data.q_image[m], **kw)
    return out


def _positive(mdata: MachineData, mask: np.ndarray | None = None) -> str | None:
    """The questions' first choice (what `score` is the probability of), when they share one."""
    pos = mdata.positive if mask is None else mdata.positive[mask]
    values = {p for p in pos.tolist() if p}
    return values.pop() if len(values) == 1 else None


# ------------------------------------------------------------------------------ GEP vectors
def _score_vector(data: CampaignData, mdata: MachineData, mask: np.ndarray, gender_order: list[str],
                  attributes: list[str]) -> dict[str, float | None] | None:
    """GEP vector from the machine's scores (mean score per gender and attribute, GEP's C-f_a /
    CLS-f_a), when every question of the setting has one."""
    s = mdata.score[mask]
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
    Kendall tau-b, sign MCC and Pearson r (GEP Tables 4, 19). `basis`: "scores" when the labeller gave
    a score on every question of the setting (the vector of mean scores, as GEP's C-f_a / CLS-f_a),
    else "labels" (the GEP section of the machine labels)."""
    quiet = dataclasses.replace(options, n_boot=0, n_perm=0)
    human_sec = gep_section(data, human, ties, quiet, seed)
    machine_sec = gep_section(data, mdata.choice, np.zeros(human.size, dtype=bool), quiet, seed)
    gender_order = human_sec["genders"]
    out: dict[str, Any] = {}
    for setting in ("neutral", "explicit"):
        if setting not in human_sec or setting not in machine_sec:
            continue
        attrs = list(human_sec[setting]["vector"])
        mask = (data.q_setting == setting) & np.isin(data.q_meta["gender"], gender_order[:2])
        by_scores = _score_vector(data, mdata, mask, gender_order, attrs)
        vector = by_scores if by_scores is not None else machine_sec[setting]["vector"]
        values = [v for v in vector.values() if v is not None]
        score = float(np.mean(np.abs(values))) if values else None
        out[setting] = {"basis": "scores" if by_scores is not None else "labels", "score": _f(score),
                        "vector": vector, "human_score": human_sec[setting]["score"],
                        "human_vector": human_sec[setting]["vector"],
                        "label_score": machine_sec[setting]["score"],
                        **machine.vector_agreement(vector, human_sec[setting]["vector"], attrs)}
    return out


def clipscore_section(data: CampaignData, mdata: MachineData) -> dict[str, Any]:
    """Mean CLIPScore per setting (GEP Table 3's image-text alignment reference) with a t interval over
    images; images the report leaves out (excluded) are left out here too."""
    keep = set(np.unique(data.q_image).tolist())
    out: dict[str, Any] = {}
    for setting in ("neutral", "explicit"):
        rows = [r for r in mdata.clipscore if r["setting"] == setting and r["image"] in keep]
        if not rows:
            continue
        v = np.array([r["score"] for r in rows], dtype=float)
        ci = stats.t.interval(0.95, v.size - 1, loc=v.mean(), scale=stats.sem(v)) if v.size > 1 else (None, None)
        out[setting] = {"mean": _f(v.mean()), "ci": [_f(ci[0]), _f(ci[1])], "images": int(v.size),
                        "models": sorted({r["model"] for r in rows})}
    return out


# ------------------------------------------------------------------------------ hybrid
def _split(human: np.ndarray, mdata: MachineData) -> tuple[np.ndarray, np.ndarray]:
    """(labeled, unlabeled) questions: with a recorded human sample, questions of sampled images with
    a human label / of the other images; without one, questions with / without a human label (then
    PPI assumes the answered questions are a random subset: said in `sample`)."""
    has_m = mdata.choice != ""
    has_h = (human != "") & (human != "tie")
    if mdata.sample_active:
        return mdata.sampled & has_h & has_m, ~mdata.sampled & has_m
    return has_h & has_m, ~has_h & (human != "tie") & has_m


def _freq(num_h: np.ndarray, den_h: np.ndarray, num_m: np.ndarray, den_m: np.ndarray, lab: np.ndarray,
          unl: np.ndarray, confidence: float, scale: float = 1.0) -> dict[str, Any]:
    if (den_h[lab] == 1).all() and (den_m[lab] == 1).all() and (den_m[unl] == 1).all():
        r = hybrid.ppi_mean(num_h[lab], num_m[lab], num_m[unl], confidence)
        if scale != 1.0:
            r = _scaled(r, scale)
        return r
    return hybrid.ppi_ratio(num_h[lab], den_h[lab], num_m[lab], den_m[lab], num_m[unl], den_m[unl], confidence,
                            scale)


def _scaled(r: dict[str, Any], k: float) -> dict[str, Any]:
    def sc(v: Any) -> Any:
        return None if v is None else k * v
    out = dict(r, estimate=sc(r["estimate"]), ci=[sc(v) for v in r["ci"]])
    for part in ("human_only", "machine_only"):
        out[part] = dict(r[part], estimate=sc(r[part]["estimate"]), ci=[sc(v) for v in r[part]["ci"]])
    return out


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
        "methods": hybrid.METHODS, "confidence": options.confidence}
    if data.campaign.kind == "gep":
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
    pm, cm, _ = gep.present_weights(mdata.choice, options.gep_tie_policy)
    out: dict[str, Any] = {}
    for setting in ("neutral", "explicit"):
        mask = (data.q_setting == setting) & np.isin(g_all, genders)
        if not mask.any():
            continue
        attrs = [a for a in attr_order if ((a_all == a) & mask).any()]
        freqs: dict[str, dict[str, Any]] = {g: {} for g in genders}
        for g in genders:
            for a in attrs:
                cell = mask & (g_all == g) & (a_all == a)
                freqs[g][a] = _freq(ph, ch, pm, cm, cell & lab, cell & unl, options.confidence)
        vector = {a: hybrid.ppi_difference(freqs[genders[0]][a], freqs[genders[1]][a], options.confidence)
                  for a in attrs}
        cells = np.where(g_all == genders[0], 0, 1) * len(attrs) + np.maximum(index_in(a_all, attrs), 0)
        n_cells = 2 * len(attrs)
        keep_h, keep_u = mask & lab, mask & unl
        rows_h = _image_rows(data.q_image, cells, n_cells, [ph, ch], keep_h)
        rows_m = _image_rows(data.q_image, cells, n_cells, [pm, cm], keep_h)
        rows_u = _image_rows(data.q_image, cells, n_cells, [pm, cm], keep_u)
        score = hybrid.ppi_statistic(_gep_score_rows(len(attrs), n_cells), rows_h, rows_m, rows_u,
                                     n_boot=options.n_boot, confidence=options.confidence, seed=seed)
        out[setting] = {"frequencies": freqs, "vector": {a: vector[a] for a in attrs}, "score": score}
    return out


def _gep_score_rows(n_attr: int, n_cells: int):  # type: ignore[no-untyped-def]
    def score(rows: np.ndarray) -> float:
        t = rows.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = t[:n_cells] / t[n_cells:]
        v = f[:n_attr] - f[n_attr:]
        v = v[np.isfinite(v)]
        return float(np.mean(np.abs(v))) if v.size else float("nan")
    return score


def _pst_hybrid(data: CampaignData, human: np.ndarray, mdata: MachineData, lab: np.ndarray, unl: np.ndarray,
                options: ReportOptions) -> dict[str, Any]:
    spec = data.campaign.spec
    stereotype_of = {g["name"]: g["stereotype"] for g in spec["design"]["identities"]["groups"]}
    stereotypes = np.array([stereotype_of.get(g, "masculine") for g in data.q_meta["group"]], dtype=object)
    identities = data.q_meta["identity"]
    sh, wh = (x.astype(float) for x in pst.stereo_weights(human, stereotypes, options.treatment))
    sm, wm = (x.astype(float) for x in pst.stereo_weights(mdata.choice, stereotypes, options.treatment))
    fem_h = (pst.label_kinds(human) == pst.K_FEM).astype(float)
    fem_m = (pst.label_kinds(mdata.choice) == pst.K_FEM).astype(float)
    conf = options.confidence
    out: dict[str, Any] = {}
    for setting in ("single", "paired", "intervention"):
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
            micro[ident] = _freq(sh * wh, wh, sm * wm, wm, cell & lab, cell & unl, conf, scale=100.0)
            feminine[ident] = _freq(fem_h, wh if options.treatment == "excluded" else (human != "").astype(float),
                                    fem_m, wm if options.treatment == "excluded" else (mdata.choice != "").astype(float),
                                    cell & lab, cell & unl, conf, scale=100.0)
        out[setting] = {"overall": overall, "micro": micro, "percent_feminine": feminine}
    return out
