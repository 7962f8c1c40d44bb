"""Significance between campaigns, or between two settings of one campaign (issue 16): the
`significance` and `pooled_agreement` keys of `GET /api/reports/compare/` (docs/metrics.md).

Pure (no database): computed from the campaigns' `CampaignData` with the report's own labels
(`metrics.sections.report.question_labels`, same options) and the functions of `metrics.core.significance` /
`metrics.core.amplification` / `metrics.core.agreement_subsets`.

- Unit of resampling and permutation: the IMAGE. The labels are the report's per-question labels
  (majority or Dawid-Skene of the effective answers); a permutation reassigns whole images (every
  person / attribute question of an image and so every annotation on it) between the two sides,
  within strata (GEP: the image's gender; the PST gap: the setting), keeping each side's number of
  images. The bootstrap resamples images within each side (and stratum).
- Several campaigns: every pair (i < j, in the order given), difference = first minus second.
- Holm: per pair and section, over the per-identity (PST `micro`), per-attribute (GEP `vector`) or
  per-template (amplification) tests; the headline rows (overall, group, score, average) are
  unadjusted (`p_holm` null, `family` null). Pairs are not adjusted against each other.
"""
from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np

from campaigns.spec import GEP_SETTINGS, PAIRED, PST, PST_SETTINGS, SINGLE
from common.errors import ApplicationError
from metrics.compare.options import CompareOptions
from metrics.core import agreement_subsets
from metrics.core._arrays import distinct_values
from metrics.core.amplification import compare_amplification
from metrics.core.gep import attribute_frequencies
from metrics.core.report_warnings import DOMAIN_RULES, WarningLog, collecting, flag_domain
from metrics.core.significance import Difference, compare_gep, compare_pst, compare_pst_gap
from metrics.extract.data import CampaignData
from metrics.options import ReportOptions

from .agreement import agreement_data
from .labels import question_labels

UNIT = ("image: whole images (all questions and annotations of an image) are resampled and permuted between "
        "the two sides, within strata (GEP: gender; PST gap: setting)")


def _f(x: Any) -> float | None:
    if x is None:
        return None
    value = float(x)
    return None if math.isnan(value) or math.isinf(value) else value


def _row(section: str, metric: str, name: str, family: str | None, d: Difference) -> dict[str, Any]:
    body = d.as_dict()
    return {"section": section, "metric": metric, "name": name, "family": family,
            "a": _f(body["a"]), "b": _f(body["b"]), "difference": _f(body["difference"]),
            "ci": [_f(body["ci"][0]), _f(body["ci"][1])], "ci_method": body["ci_method"],
            "confidence": body["confidence"], "p_value": _f(body["p_value"]), "p_holm": _f(body["p_holm"]),
            "extended": body["extended"]}


class _Side:
    """One side of a comparison: a campaign's data (optionally one setting of it) with its labels."""

    def __init__(self, data: CampaignData, options: ReportOptions, setting: str | None = None) -> None:
        self.data = data
        self.setting = setting
        self.labels, _ = question_labels(data, options)
        spec = data.campaign.spec
        self.groups: dict[str, str] = {}
        stereo: dict[str, str] = {}
        if data.campaign.kind == PST:
            for g in spec["design"]["identities"]["groups"]:
                stereo[g["name"]] = g["stereotype"]
                self.groups.update({i: g["name"] for i in g["identities"]})
            self.stereotypes = np.array([stereo.get(g, "masculine") for g in data.q_meta["group"]], dtype=object)

    def settings(self) -> set[str]:
        return distinct_values(self.data.q_setting)

    def pst(self, setting: str) -> dict[str, np.ndarray]:
        m = self.data.q_setting == setting
        d = self.data
        return {"image_ids": d.q_image[m], "identities": d.q_meta["identity"][m], "labels": self.labels[m],
                "stereotypes": self.stereotypes[m]}

    def gep(self, setting: str) -> dict[str, np.ndarray]:
        m = self.data.q_setting == setting
        d = self.data
        return {"image_ids": d.q_image[m], "genders": d.q_meta["gender"][m], "attributes": d.q_meta["attribute"][m],
                "labels": self.labels[m]}

    def amp(self) -> dict[str, np.ndarray]:
        m = self.data.q_setting == SINGLE
        d = self.data
        templates = d.q_meta.get("template")
        tmpl = templates[m] if templates is not None else np.full(int(m.sum()), "default", dtype=object)
        tmpl = np.where(tmpl == "", "default", tmpl)
        return {"image_ids": d.q_image[m], "identities": d.q_meta["identity"][m], "templates": tmpl,
                "labels": self.labels[m]}


def gep_noise(side: dict[str, np.ndarray], genders: list[str], attributes: list[str], tie_policy: str) -> float:
    """Mean binomial standard error of a side's GEP vector components (0 when none is defined)."""
    fr = attribute_frequencies(side["genders"], side["attributes"], side["labels"], genders, attributes,
                               tie_policy)  # type: ignore[arg-type]
    with np.errstate(invalid="ignore", divide="ignore"):
        var = fr.freq * (1 - fr.freq) / fr.total
        se = np.sqrt(var[0] + var[1])
    return float(np.nanmean(se)) if np.isfinite(se).any() else 0.0


def _flag_gep_score(section: str, a: dict[str, np.ndarray], b: dict[str, np.ndarray], genders: list[str],
                    attributes: list[str], tie_policy: str) -> bool:
    """The GEP score difference of two sides whose vectors differ in precision is biased (bench/validity.py
    compare.gep.score.*: BCa 47-79%, test size 12.5%): flagged (`DOMAIN_RULES["compare.gep.score.
    unequal_precision"]`); True when it is, and the caller leaves the interval and p-value out."""
    noise = sorted(gep_noise(x, genders, attributes, tie_policy) for x in (a, b))
    rule = DOMAIN_RULES["compare.gep.score.unequal_precision"]
    if noise[0] > 0 and noise[1] / noise[0] > rule.threshold:
        flag_domain("compare.gep.score.unequal_precision", f"{section}.score", ratio=noise[1] / noise[0])
        return True
    return False


#: ci_method of a row whose interval and p-value are left out (outside their validated domain; `warnings`).
LEFT_OUT = "none: outside the validated domain (see warnings)"


def _flag_gep_sparse(section: str, a: dict[str, np.ndarray], b: dict[str, np.ndarray], genders: list[str],
                     attributes: list[str], tie_policy: str) -> None:
    """Vector components with few present (or absent) questions in a gender on either side: compare gives
    them the MOVER-Jeffreys interval and test (`metrics.core.significance.compare_gep`; a bootstrap there
    under-covered, bench/validity.py compare.gep.vector.*); the warning names how many."""
    rule = DOMAIN_RULES["compare.gep.vector.sparse"]
    counts = []
    for x in (a, b):
        fr = attribute_frequencies(x["genders"], x["attributes"], x["labels"], genders, attributes,
                                   tie_policy)  # type: ignore[arg-type]
        counts.append(np.minimum(fr.present, fr.total - fr.present).min(axis=0))
    few = int((np.minimum(*counts) < rule.threshold).sum())
    if few:
        flag_domain("compare.gep.vector.sparse", f"{section}.vector", n=few, total=len(attributes))


def _pst_rows(section: str, res: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [_row(section, "overall", "", None, res["overall"])]
    rows += [_row(section, "group", g, None, d) for g, d in sorted(res["groups"].items())]
    rows += [_row(section, "micro", i, f"{section}.micro", d) for i, d in sorted(res["micro"].items())]
    return rows


def _pair(a: _Side, b: _Side, ro: ReportOptions, co: CompareOptions) -> dict[str, Any]:
    """Every test between side A and side B (a comparison of two campaigns, or of two settings)."""
    kw: dict[str, Any] = {"n_boot": co.draws, "n_perm": co.draws, "confidence": ro.confidence, "seed": co.seed}
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    notes: dict[str, Any] = {}
    log = WarningLog()  # figures outside their validity domain (`warnings`, as the report's)
    kind = a.data.campaign.kind
    pairs = ([(a.setting, b.setting)] if a.setting and b.setting else
             [(s, s) for s in (PST_SETTINGS if kind == PST else GEP_SETTINGS) if s in a.settings() & b.settings()])
    for sa, sb in pairs:
        section = f"{kind}.{sa}" if sa == sb else f"{kind}.{sa}-{sb}"
        try:
            if kind == PST:
                res = compare_pst(a.pst(sa), b.pst(sb), groups={**b.groups, **a.groups}, treatment=ro.treatment, **kw)
                rows += _pst_rows(section, res)
                if res["only_a"] or res["only_b"]:
                    notes[section] = {"only_a": res["only_a"], "only_b": res["only_b"]}
            else:
                genders = [g["name"] for g in a.data.campaign.spec["design"]["genders"]][:2]
                attrs = sorted(set(a.gep(sa)["attributes"].tolist()) & set(b.gep(sb)["attributes"].tolist()))
                res = compare_gep(a.gep(sa), b.gep(sb), genders, attrs, ro.gep_tie_policy, **kw)
                with collecting(log):
                    unequal = _flag_gep_score(section, a.gep(sa), b.gep(sb), genders, attrs, ro.gep_tie_policy)
                    _flag_gep_sparse(section, a.gep(sa), b.gep(sb), genders, attrs, ro.gep_tie_policy)
                score = _row(section, "score", "", None, res["score"])
                if unequal:  # a biased difference: no interval or test is printed for it
                    score.update(ci=[None, None], ci_method=LEFT_OUT, p_value=None, extended=False)
                rows.append(score)
                rows += [_row(section, "vector", x, f"{section}.vector", d) for x, d in sorted(res["vector"].items())]
        except ValueError as exc:  # e.g. no image of a gender on one side
            skipped.append({"section": section, "reason": str(exc)})
    if kind == PST and not a.setting and {SINGLE, PAIRED} <= a.settings() & b.settings():
        try:
            res = compare_pst_gap(a.pst("single"), a.pst("paired"), b.pst("single"), b.pst("paired"),
                                  groups={**b.groups, **a.groups}, treatment=ro.treatment, **kw)
            rows += _pst_rows("pst.gap", res)
        except ValueError as exc:
            skipped.append({"section": "pst.gap", "reason": str(exc)})
    if kind == PST and not a.setting:
        rows += _amplification_rows(a, b, kw, skipped)
    return {"rows": rows, "skipped": skipped, "only_one_side": notes, "warnings": log.as_list()}


def _references(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The spec's `references` (a list of {name, source, percent_female}) by name; absent -> {}."""
    refs = spec.get("references")
    out = {}
    if isinstance(refs, list):
        for r in refs:
            if isinstance(r, dict) and isinstance(r.get("percent_female"), dict) and r.get("name"):
                out[str(r["name"])] = r["percent_female"]
    return out


def _amplification_rows(a: _Side, b: _Side, kw: dict[str, Any], skipped: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Amplification means (per template and averaged) of the single setting against every reference
    both campaigns name (their spec `references`; side A's values); none when there is none."""
    if SINGLE not in a.settings() & b.settings():
        return []
    refs_a, refs_b = _references(a.data.campaign.spec), _references(b.data.campaign.spec)
    rows: list[dict[str, Any]] = []
    for name in sorted(set(refs_a) & set(refs_b)):
        section = f"amplification.{name}"
        try:
            res = compare_amplification(a.amp(), b.amp(), refs_a[name], **kw)
        except ValueError as exc:
            skipped.append({"section": section, "reason": str(exc)})
            continue
        rows.append(_row(section, "average", "", None, res["average"]))
        rows += [_row(section, "template", t, f"{section}.template", d) for t, d in sorted(res["templates"].items())]
    return rows


def _side_label(data: CampaignData, setting: str | None) -> dict[str, Any]:
    return {"id": data.campaign.pk, "name": data.campaign.name, "setting": setting}


def significance(datas: list[CampaignData], report_options: ReportOptions, options: CompareOptions) -> dict[str, Any]:
    """The `significance` key: every pair of campaigns (or the two settings of one campaign)."""
    if options.settings:
        (data,) = datas
        s_a, s_b = options.settings
        sides = [(_Side(data, report_options, s_a), _Side(data, report_options, s_b))]
        present = distinct_values(data.q_setting)
        missing = [s for s in options.settings if s not in present]
        if missing:
            raise ApplicationError(f"Campaign {data.campaign.pk} has no questions in setting {missing[0]}.",
                                   errors={"settings": [f"not in this campaign: {', '.join(missing)}"]})
    else:
        built = [_Side(d, report_options) for d in datas]
        sides = list(combinations(built, 2))
    comparisons = []
    for a, b in sides:
        out = _pair(a, b, report_options, options)
        comparisons.append({"a": _side_label(a.data, a.setting), "b": _side_label(b.data, b.setting),
                            "label": "A - B", **out})
    return {"test": options.test, "draws": options.draws, "seed": options.seed, "unit": UNIT,
            "confidence": report_options.confidence, "treatment": report_options.treatment,
            "gep_tie_policy": report_options.gep_tie_policy,
            "difference": "A minus B (A: the first campaign or setting of the pair)",
            "ci_method": "bca-cluster: BCa bootstrap of the difference, images resampled within each side and stratum",
            "p_value": ("two-sided studentized permutation test: D over its delta-method image-cluster standard "
                        "error (Welch-type, recomputed on every shuffle), (1 + #{|T_perm| >= |T_obs|}) / (draws + 1)"),
            "holm": "per pair and section over the per-identity / per-attribute / per-template family (statsmodels)",
            "comparisons": comparisons}


def pooled_agreement(datas: list[CampaignData], options: CompareOptions | None = None) -> dict[str, Any]:
    """Krippendorff's alpha (nominal) pooled over the campaigns' questions (count matrices stacked on
    the union of their choices), per campaign, their mean, and a BCa interval of the pooled alpha
    resampling images (when `options.draws`), as in the GEP paper's 0.81 over three models."""
    choices = sorted(set().union(*[set(d.choices) for d in datas]))
    mats: dict[str, np.ndarray] = {}
    images: list[np.ndarray] = []
    for d in datas:
        d = agreement_data(d)[0]  # adaptive redundancy: the first `min` answers of every question
        counts = d.vote_counts() if d.choices else np.zeros((d.q_id.size, 1), dtype=np.int64)
        aligned = np.zeros((counts.shape[0], max(1, len(choices))), dtype=np.int64)
        for j, c in enumerate(d.choices):
            aligned[:, choices.index(c)] = counts[:, j]
        mats[str(d.campaign.pk)] = aligned
        images.append(np.char.add(f"{d.campaign.pk}:", d.q_image.astype(str)))
    res = agreement_subsets.pooled_alpha(mats)
    out: dict[str, Any] = {
        "krippendorff_alpha": _f(res["pooled"]["alpha"]),
        "by_campaign": {k: _f(v["alpha"]) for k, v in res["by_campaign"].items()},
        "mean_of_campaigns": _f(res["mean_of_campaigns"]),
        "questions": int(sum(int((m.sum(axis=1) > 0).sum()) for m in mats.values())),
        "answers": int(sum(int(m.sum()) for m in mats.values())),
        "choices": choices,
        "definition": "Krippendorff's alpha (nominal) on the stacked questions of every campaign",
    }
    if options is not None and options.significance:
        stacked = np.concatenate(list(mats.values()))
        ci = agreement_subsets.alpha_interval(stacked, np.concatenate(images), n_boot=min(options.draws, 2000),
                                              seed=options.seed, by_pattern=True)
        out["krippendorff_alpha_ci"] = [_f(ci.low), _f(ci.high)]
        out["ci_method"] = "bca-cluster over images (at most 2,000 draws)"
    return out
