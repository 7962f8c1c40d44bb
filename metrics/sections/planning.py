"""Sample-size planning in the spec preview (`POST /api/specs/preview/` -> `planning`).

The campaigns app may not import metrics, so metrics registers this function with
`campaigns.registry.register_preview` (MetricsConfig.ready); the statistics are the pure functions
of `metrics.core.planning` (assumptions and formulas in its docstring). Per setting of the design,
for the planned images and the spec's redundancy R (`annotation.redundancy`), the expected 95%
half-width of the headline score's interval, under stated assumptions (the papers' agreement:
PST Fleiss' kappa 0.90, the paper's 0.88-0.92; GEP Krippendorff's alpha 0.81), and, with
`?target_half_width=` (the headline score's unit: STS percent points for PST, GEP score for GEP),
the images needed per setting to reach it.
"""
from __future__ import annotations

import math
from typing import Any

from common.errors import ApplicationError
from metrics.core.planning import gep_plan, pst_plan

# The stated assumptions (what the papers report, and a plausible effect to plan for).
PST_ASSUMPTION = {"kappa": 0.90, "kappa_source": "PST paper: Fleiss' kappa 0.88-0.92", "true_sts": 40.0,
                  "prevalence": 0.5, "icc_paired": 0.1,
                  "model": "symmetric binary annotator noise, majority of R, binomial variance x design effect"}
GEP_ASSUMPTION = {"alpha": 0.81, "alpha_source": "GEP paper section 5: Krippendorff's alpha 0.81",
                  "frequencies": {"neutral": {"first_gender": 0.10, "second_gender": 0.06},
                                  "explicit": {"first_gender": 0.65, "second_gender": 0.55}},
                  "model": "symmetric binary annotator noise, majority of R, independent attributes, normal "
                           "half-width (a floor when the true GEP is near 0: see near_zero)"}
PERSONS = {"single": 1, "paired": 2, "intervention": 2}


def _target(params: Any) -> float | None:
    raw = params.get("target_half_width") if hasattr(params, "get") else None
    if raw in (None, ""):
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        raise ApplicationError("Invalid preview parameter target_half_width: must be a positive number",
                               errors={"target_half_width": ["must be a positive number (the headline score's "
                                                             "unit: STS percent points for PST, GEP score for GEP)"]})
    return value


def _pst(spec: dict[str, Any], summary: dict[str, Any], r: int, target: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for setting, counts in summary["by_setting"].items():
        if counts["images"] <= 0:
            continue
        p = pst_plan(counts["images"], redundancy=r, persons_per_image=PERSONS.get(setting, 2),
                     sts=PST_ASSUMPTION["true_sts"], kappa=PST_ASSUMPTION["kappa"],
                     prevalence=PST_ASSUMPTION["prevalence"],
                     icc=PST_ASSUMPTION["icc_paired"] if PERSONS.get(setting, 2) > 1 else 0.0,
                     target_half_width=target)
        out[setting] = {"images": p["images"], "persons": p["persons"], "answers": p["answers"],
                        "half_width": p["half_width"], "standard_error": p["standard_error"],
                        "expected_sts": p["expected_sts"], "images_needed": p["images_needed"],
                        "annotator_accuracy": p["assumptions"]["annotator_accuracy"],
                        "label_accuracy": p["assumptions"]["label_accuracy"]}
    return out


def _gep(spec: dict[str, Any], summary: dict[str, Any], r: int, target: float | None) -> dict[str, Any]:
    design = spec["design"]
    n_genders = max(2, len(design["genders"]))
    n_attr = len(design["attributes"])
    out: dict[str, Any] = {}
    for setting, counts in summary["by_setting"].items():
        images = int(counts["images"] * 2 / n_genders)  # the score compares the first two genders
        freq = GEP_ASSUMPTION["frequencies"][setting]
        try:
            p = gep_plan(images, frequencies_women=freq["first_gender"], frequencies_men=freq["second_gender"],
                         n_attributes=n_attr, setting=setting, redundancy=r, alpha=GEP_ASSUMPTION["alpha"],
                         target_half_width=target)
        except ValueError as exc:  # fewer than one image per gender and attribute
            out[setting] = {"images": images, "half_width": None, "note": str(exc)}
            continue
        out[setting] = {"images": p["images"], "images_per_cell": p["images_per_cell"], "answers": p["answers"],
                        "half_width": p["half_width"], "standard_error": p["standard_error"],
                        "expected_gep": p["expected_gep"], "true_gep": p["true_gep"],
                        "images_needed": p["images_needed"], "near_zero": p["gep_near_zero"],
                        "annotator_accuracy": p["assumptions"]["annotator_accuracy"],
                        "label_accuracy": p["assumptions"]["label_accuracy"]}
    return out


def spec_planning(spec: dict[str, Any], summary: dict[str, Any], params: Any) -> dict[str, Any]:
    """`{"planning": {...}}` for the preview (docs/metrics.md, "Sample size planning")."""
    target = _target(params)
    r = int(((spec.get("annotation") or {}).get("redundancy")) or 3)
    kind = spec["kind"]
    by_setting = _pst(spec, summary, r, target) if kind == "pst" else _gep(spec, summary, r, target)
    headline_order = ("paired", "single", "intervention") if kind == "pst" else ("neutral", "explicit")
    headline = next((s for s in headline_order if s in by_setting and by_setting[s].get("half_width") is not None),
                    None)
    block = {"statistic": "pst.overall (STS, percent points)" if kind == "pst" else "gep.score",
             "headline_setting": headline,
             "half_width": by_setting[headline]["half_width"] if headline else None,
             "by_setting": by_setting}
    planning: dict[str, Any] = {
        "assumption": {**(PST_ASSUMPTION if kind == "pst" else GEP_ASSUMPTION), "redundancy": r},
        "confidence": 0.95,
        "target_half_width": target,
        "pst": block if kind == "pst" else None,
        "gep": block if kind == "gep" else None,
        "images_for_target": ({s: v.get("images_needed") for s, v in by_setting.items()} if target is not None
                              else None),
    }
    return {"planning": planning}
