"""The report's `summary`: what the figures say, in plain words with their intervals, at the top of
the report (JSON `summary`, both HTML pages, the replication package's card).

Built from the finished report dict only (pure: no database, no recomputation), so it can never
disagree with the sections it reads. Parts, each a list of sentences:

- `headline`: the kind's headline figures with their intervals, and what they mean on the papers'
  scales (PST: STS from -100, always the anti-stereotyped gender, to +100, always the stereotyped
  one, 0 = no association; GEP: the mean absolute difference between the genders' attribute
  frequencies, 0 = the same for both);
- `comparison`: the other setting (the paired-minus-single gap and its permutation test), the
  fairness intervention, each reference (bias amplification), and the hybrid estimate;
- `agreement`: between annotators (Krippendorff's alpha read on Krippendorff's scale) and, with a
  machine source, of the labeller with the human majority;
- `data`: what the figures rest on (answers, annotators, questions, images, the human sample and the
  labeller, synthetic data);
- `warnings`: every warning of the report (`warnings`: path and message).

`lines` is all of them in that order. A figure the report does not have is left out, never guessed.
"""
from __future__ import annotations

import logging
import math
from typing import Any

from campaigns.spec import GEP_SETTINGS, INTERVENTION, PAIRED, PST, PST_SETTINGS

__all__ = ["report_summary", "summary_or_warning"]
_log = logging.getLogger(__name__)

SETTINGS_PST = PST_SETTINGS
SETTINGS_GEP = GEP_SETTINGS


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def _fmt(x: Any, digits: int = 0) -> str:
    v = _num(x)
    if v is None:
        return "n/a"
    return f"{v:.{digits}f}" if digits else f"{round(v):.0f}"


def _ci(ci: Any, digits: int = 0) -> str:
    if isinstance(ci, list | tuple) and len(ci) == 2 and _num(ci[0]) is not None and _num(ci[1]) is not None:
        return f" [{_fmt(ci[0], digits)}, {_fmt(ci[1], digits)}]"
    return " (no interval)"


def _sign(ci: Any) -> int:
    """+1 / -1 when the interval lies above / below 0, else 0."""
    if isinstance(ci, list | tuple) and len(ci) == 2 and _num(ci[0]) is not None and _num(ci[1]) is not None:
        if ci[0] > 0:
            return 1
        if ci[1] < 0:
            return -1
    return 0


def _p(p: Any) -> str:
    v = _num(p)
    return "n/a" if v is None else ("< 0.001" if v < 0.001 else f"{v:.3f}")


def _sts_meaning(value: Any, ci: Any, setting: str, stereotype: str) -> str:
    v = _num(value)
    if v is None:
        return "no figure"
    images = "paired images" if setting in (PAIRED, INTERVENTION) else "single-person images"
    share = round((v + 100) / 2)
    sign = _sign(ci)
    if sign > 0:
        if v >= 33:
            return (f"the model follows {stereotype} stereotypes in most {images} (about {share}% of the persons "
                    "counted as the stereotyped gender)")
        return f"the model leans towards {stereotype} stereotypes in {images} (about {share}% stereotyped)"
    if sign < 0:
        return f"the model shows the anti-stereotyped gender more often than the stereotyped one in {images}"
    return f"no association with {stereotype} stereotypes can be told from these {images} (the interval includes 0)"


def _pst(report: dict[str, Any], stereotype: str) -> tuple[list[str], list[str]]:
    pst = report.get("pst") or {}
    headline, comparison = [], []
    for setting in SETTINGS_PST:
        sec = pst.get(setting)
        if not isinstance(sec, dict) or _num(sec.get("overall")) is None:
            continue
        headline.append(f"{setting.capitalize()} STS {_fmt(sec['overall'])}{_ci(sec.get('overall_ci'))} "
                        f"({sec.get('persons', 0)} persons in {sec.get('images', 0)} images): "
                        f"{_sts_meaning(sec['overall'], sec.get('overall_ci'), setting, stereotype)}.")
    gap = pst.get("gap") or {}
    if _num(gap.get("overall")) is not None:
        test = gap.get("permutation_test") or {}
        sign = _sign(gap.get("overall_ci"))
        what = ("paired images are more stereotyped than single-person ones" if sign > 0 else
                "paired images are less stereotyped than single-person ones" if sign < 0 else
                "no difference between the settings can be told from this data")
        tested = f", permutation test p = {_p(test.get('p_value'))}" if test else ""
        comparison.append(f"Paired minus single: {_fmt(gap['overall'])}{_ci(gap.get('overall_ci'))} STS points"
                          f"{tested}: {what}.")
    inter = (pst.get("intervention_analysis") or {}).get("all") or {}
    diff = inter.get("difference") if isinstance(inter.get("difference"), dict) else None
    diff = diff or {}
    if _num(inter.get("intervention")) is not None:
        comparison.append(f"Fairness intervention: STS {_fmt(inter['intervention'])} with the intervention against "
                          f"{_fmt(inter.get('plain'))} without (difference {_fmt(diff.get('difference'))}"
                          f"{_ci(diff.get('ci'))}).")
    for name, ref in (report.get("amplification") or {}).items():
        if not isinstance(ref, dict) or _num(ref.get("average")) is None:
            continue
        sign = _sign(ref.get("average_ci"))
        what = ("the model amplifies the reference's gender skew" if sign > 0 else
                "the model's skew is weaker than the reference's" if sign < 0 else
                "no amplification of the reference's skew can be told from this data")
        ttest = ref.get("ttest") or {}
        comparison.append(f"Against the reference {ref.get('source') or name}: bias amplification "
                          f"{_fmt(ref['average'], 1)}{_ci(ref.get('average_ci'), 1)} points of %F "
                          f"(t-test p = {_p(ttest.get('p_value'))}): {what}.")
    return headline, comparison


def _gep(report: dict[str, Any]) -> list[str]:
    gep = report.get("gep") or {}
    genders = gep.get("genders") or ["first gender", "second gender"]
    out = []
    for setting in SETTINGS_GEP:
        sec = gep.get(setting)
        if not isinstance(sec, dict) or _num(sec.get("score")) is None:
            continue
        score = float(sec["score"])
        sign = _sign(sec.get("score_ci"))
        what = (f"on average an attribute's frequency differs by {round(100 * score)} percentage points between "
                f"{genders[0]} and {genders[1]} images" if sign else
                "no difference between the genders' attribute frequencies can be told from this data")
        vector = {k: _num(v) for k, v in (sec.get("vector") or {}).items() if _num(v) is not None}
        top = sorted(vector.items(), key=lambda kv: -abs(kv[1] or 0))[:2]
        largest = "; largest: " + ", ".join(
            f"“{k}” {round(100 * abs(v or 0))} points more often for {genders[0] if (v or 0) > 0 else genders[1]}"
            for k, v in top) if top and sign else ""
        out.append(f"GEP score ({setting}) {_fmt(score, 3)}{_ci(sec.get('score_ci'), 3)} over {sec.get('images', 0)} "
                   f"images (0 = the same for both genders): {what}{largest}.")
    return out


def _hybrid(report: dict[str, Any]) -> list[str]:
    out = []
    for labeller, sec in (report.get("hybrid") or {}).items():
        if not isinstance(sec, dict):
            continue
        sample = sec.get("sample") or {}
        for setting in (*SETTINGS_PST, *SETTINGS_GEP):
            part = sec.get(setting) or {}
            est = part.get("overall") or part.get("score") or {}
            if _num(est.get("estimate")) is None:
                continue
            digits = 3 if setting in SETTINGS_GEP else 0
            figure = "GEP score" if setting in SETTINGS_GEP else "STS"
            human = est.get("human_only") or {}
            out.append(f"Hybrid {setting} {figure} (human sample + {labeller}, {est.get('method')}): "
                       f"{_fmt(est['estimate'], digits)}{_ci(est.get('ci'), digits)}, against "
                       f"{_fmt(human.get('estimate'), digits)}{_ci(human.get('ci'), digits)} from the human sample "
                       f"alone ({sample.get('human_images', 0)} human-labelled images, "
                       f"{sample.get('machine_only_images', 0)} machine-only).")
    return out


def _alpha_reading(alpha: float) -> str:
    # Krippendorff's guideline: >= 0.8 reliable, 0.667-0.8 tentative conclusions, below: unreliable.
    if alpha >= 0.8:
        return "reliable"
    if alpha >= 0.667:
        return "enough for tentative conclusions only"
    return "low: read the figures with care"


def _agreement(report: dict[str, Any]) -> list[str]:
    out = []
    overall = (report.get("agreement") or {}).get("overall") or {}
    alpha = _num(overall.get("krippendorff_alpha"))
    if alpha is not None:
        kappa = _num(overall.get("fleiss_kappa"))
        pa = _num(overall.get("percent_agreement"))
        out.append(f"Annotators agree with Krippendorff's alpha {alpha:.2f} ({_alpha_reading(alpha)})"
                   + (f", Fleiss' kappa {kappa:.2f} over {overall.get('fleiss_items_used', 0)} questions" if kappa
                      is not None else "")
                   + (f", {round(100 * pa)}% of answer pairs agreeing" if pa is not None else "") + ".")
    else:
        out.append("Annotator agreement: not computed (too few questions with several answers).")
    for labeller, sec in (report.get("auto") or {}).items():
        agree = ((sec or {}).get("agreement") or {}).get("overall") or {}
        if _num(agree.get("accuracy")) is None:
            continue
        acc_ci = agree.get("accuracy_ci")
        scaled = [100 * float(x) for x in acc_ci] if isinstance(acc_ci, list) and len(acc_ci) == 2 and all(
            _num(x) is not None for x in acc_ci) else None
        out.append(f"The labeller {labeller} agrees with the human majority on {round(100 * agree['accuracy'])}%"
                   f"{_ci(scaled)} of "
                   f"{agree.get('n', 0)} questions (Cohen's kappa {_fmt(agree.get('cohen_kappa'), 2)}"
                   f"{_ci(agree.get('cohen_kappa_ci'), 2)}).")
    return out


def _data(report: dict[str, Any]) -> list[str]:
    counts = report.get("counts") or {}
    source = report.get("source") or {}
    campaign = report.get("campaign") or {}
    out = [f"The figures rest on {counts.get('answers', 0)} answers from {counts.get('annotators', 0)} annotators "
           f"on {counts.get('questions_labelled', 0)} labelled questions of {counts.get('questions', 0)} "
           f"({counts.get('images', 0)} images, {counts.get('images_excluded', 0)} excluded by the researcher; "
           f"ties: {counts.get('ties', 0)})."]
    if source:
        kind = "hybrid of the human sample and" if source.get("kind") == "hybrid" else "labels of"
        model = f" (model {source['model']})" if source.get("model") else ""
        out.append(f"Label source: {kind} the machine labeller {source.get('labeller')}{model}, "
                   f"{source.get('questions_labelled', 0)} questions labelled.")
    for sec in (report.get("hybrid") or {}).values():
        sample = (sec or {}).get("sample") or {}
        if sample:
            out.append(f"Human sample: {sample.get('human_images', 0)} images labelled by humans, "
                       f"{sample.get('machine_only_images', 0)} by the machine only.")
            break
    if campaign.get("synthetic"):
        out.append("Synthetic data: placeholder images, not a model's output; these figures describe no model.")
    return out


def report_summary(report: dict[str, Any], *, aspect: str | None = None) -> dict[str, Any]:
    """The summary of a built report (see the module docstring); `aspect` names the PST stereotypes
    ("occupation", "power")."""
    kind = (report.get("campaign") or {}).get("kind")
    stereotype = {"occupation": "occupational", "power": "power-role"}.get(aspect or "", "the design's")
    comparison: list[str] = []
    if kind == PST:
        headline, comparison = _pst(report, stereotype)
    else:
        headline = _gep(report)
    comparison += _hybrid(report)
    if not headline:
        headline = ["No headline figure yet: no labelled question (answers, or a label source, are needed)."]
    warnings = [f"{w.get('path')}: {w.get('message')}" for w in report.get("warnings") or []
                if isinstance(w, dict)]
    parts = {"headline": headline, "comparison": comparison, "agreement": _agreement(report),
             "data": _data(report), "warnings": warnings}
    return {**parts, "lines": [line for key in parts for line in parts[key]]}


def summary_or_warning(report: dict[str, Any], *, aspect: str | None = None) -> dict[str, Any]:
    """`report_summary`, or (a report shape it does not know) a summary that says so, with a warning in
    the report's `warnings`: the sections stand whatever happens here."""
    try:
        return report_summary(report, aspect=aspect)
    except (ValueError, ArithmeticError, IndexError, KeyError, TypeError, AttributeError) as exc:
        _log.exception("report summary not written")
        message = f"not written ({type(exc).__name__}: {exc}); the sections below stand"
        report.setdefault("warnings", []).append({"path": "summary", "message": message})
        return {"headline": [f"Summary {message}."], "comparison": [], "agreement": [], "data": [],
                "warnings": [f"summary: {message}"], "lines": [f"Summary {message}."]}
