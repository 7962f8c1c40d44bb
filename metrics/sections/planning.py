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

from typing import Any

from annotation.redundancy import DEFAULT_ADAPTIVE, FIXED_DEFAULT, is_adaptive, settled
from campaigns.spec import GEP, GEP_SETTINGS, INTERVENTION, NEUTRAL, PAIRED, PST, SINGLE
from common.errors import ApplicationError
from common.inputs import BodyError
from common.numbers import number
from metrics.core.planning import (
    adaptive_majority,
    annotator_accuracy,
    comparison_images,
    gep_plan,
    pst_plan,
)

# The stated assumptions (what the papers report, and a plausible effect to plan for).
PST_ASSUMPTION: dict[str, Any] = {"kappa": 0.90, "kappa_source": "PST paper: Fleiss' kappa 0.88-0.92", "true_sts": 40.0,
                  "prevalence": 0.5, "icc_paired": 0.1,
                  "model": "symmetric binary annotator noise, majority of R, binomial variance x design effect"}
GEP_ASSUMPTION: dict[str, Any] = {"alpha": 0.81, "alpha_source": "GEP paper section 5: Krippendorff's alpha 0.81",
                  "frequencies": {"neutral": {"first_gender": 0.10, "second_gender": 0.06},
                                  "explicit": {"first_gender": 0.65, "second_gender": 0.55}},
                  "model": "symmetric binary annotator noise, majority of R, independent attributes, normal "
                           "half-width (a floor when the true GEP is near 0: see near_zero)"}
PERSONS = {"single": 1, "paired": 2, "intervention": 2}
# The difference a comparison of two campaigns or settings plans for when `?detect_difference=` is not
# given, and the power it plans for.
DEFAULT_DIFFERENCE = {"pst": 10.0, "gep": 0.05}
POWER = 0.80
TARGET_RANGE = ("0.0001", "1000")  # `target_half_width` / `detect_difference`, in the headline score's unit
CHOICES = {"pst": 3, "gep": 2}  # answer choices per question (the adaptive rule's Dirichlet has K of them)


def _target(params: Any, name: str = "target_half_width") -> float | None:
    raw = params.get(name) if hasattr(params, "get") else None
    if raw is None or raw == "":
        return None
    try:  # bounded: a tiny target squares into an overflow (images needed ~ (width / target)^2)
        return number(raw, field=name, kind="float", minimum=TARGET_RANGE[0], maximum=TARGET_RANGE[1])
    except BodyError:
        raise ApplicationError(f"Invalid preview parameter {name}: must be a positive number",
                               errors={name: [f"must be a positive number from {TARGET_RANGE[0]} to {TARGET_RANGE[1]} "
                                              "(the headline score's unit: STS percent points for PST, GEP score "
                                              "for GEP)"]}) from None


class Design:
    """The spec's redundancy as planning uses it: a fixed R, or the adaptive object (defaults filled),
    whose label accuracy and expected answers per question follow from the annotator accuracy
    (`metrics.core.planning.adaptive_majority` with the campaign's own stopping rule)."""

    def __init__(self, raw: Any, kind: str) -> None:
        self.adaptive = is_adaptive(raw)
        self.cfg: dict[str, Any] | None = {**DEFAULT_ADAPTIVE, **raw} if self.adaptive else None
        self.r = int(self.cfg["min"]) if self.cfg else int(raw or FIXED_DEFAULT)
        self.choices = CHOICES[kind]
        self.per_setting: dict[str, dict[str, float]] = {}

    def kwargs(self, setting: str, agreement: float, prevalence: float) -> dict[str, Any]:
        if self.cfg is None:
            return {"redundancy": self.r}
        cfg = self.cfg
        a = annotator_accuracy(agreement, prevalence)
        k = self.choices
        m = adaptive_majority(a, int(cfg["min"]), int(cfg["max"]),
                              lambda r, w: settled({"right": r, "wrong": w}, k, cfg))
        self.per_setting[setting] = m
        return {"redundancy": self.r, "majority": (m["right"], m["wrong"], m["tie"]),
                "answers_per_question": m["answers_per_question"]}

    def block(self) -> dict[str, Any] | None:
        if self.cfg is None:
            return None
        return {**self.cfg, "model": "the campaign's stopping rule on the votes of annotators of the assumed accuracy "
                                     "(exact enumeration); a question's label is its majority when it stops",
                "by_setting": {s: {"answers_per_question": m["answers_per_question"], "label_accuracy": m["right"],
                                   "label_tie": m["tie"]} for s, m in self.per_setting.items()}}


def _pst(spec: dict[str, Any], summary: dict[str, Any], design: Design, target: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for setting, counts in summary["by_setting"].items():
        if counts["images"] <= 0:
            continue
        extra = design.kwargs(setting, PST_ASSUMPTION["kappa"], PST_ASSUMPTION["prevalence"])
        p = pst_plan(counts["images"], persons_per_image=PERSONS.get(setting, 2), **extra,
                     sts=PST_ASSUMPTION["true_sts"], kappa=PST_ASSUMPTION["kappa"],
                     prevalence=PST_ASSUMPTION["prevalence"],
                     icc=PST_ASSUMPTION["icc_paired"] if PERSONS.get(setting, 2) > 1 else 0.0,
                     target_half_width=target)
        out[setting] = {"images": p["images"], "persons": p["persons"], "answers": p["answers"],
                        "half_width": p["half_width"], "standard_error": p["standard_error"],
                        "expected_sts": p["expected_sts"], "images_needed": p["images_needed"],
                        "annotator_accuracy": p["assumptions"]["annotator_accuracy"],
                        "label_accuracy": p["assumptions"]["label_accuracy"],
                        "answers_per_question": p["answers"] / max(p["persons"], 1),
                        "attenuation": p["assumptions"]["label_accuracy"] - _wrong(extra, p)}
    return out


def _wrong(extra: dict[str, Any], p: dict[str, Any]) -> float:
    """P(majority wrong) of the plan's labels: what label noise takes off a true difference."""
    if "majority" in extra:
        return float(extra["majority"][1])
    return 1.0 - float(p["assumptions"]["label_accuracy"]) - float(p["assumptions"]["label_tie"])


def _gep(spec: dict[str, Any], summary: dict[str, Any], design: Design, target: float | None) -> dict[str, Any]:
    n_genders = max(2, len(spec["design"]["genders"]))
    n_attr = len(spec["design"]["attributes"])
    out: dict[str, Any] = {}
    for setting, counts in summary["by_setting"].items():
        images = int(counts["images"] * 2 / n_genders)  # the score compares the first two genders
        freq = GEP_ASSUMPTION["frequencies"][setting]
        prevalence = min(0.99, max(0.01, (freq["first_gender"] + freq["second_gender"]) / 2))
        try:
            extra = design.kwargs(setting, GEP_ASSUMPTION["alpha"], prevalence)
            p = gep_plan(images, frequencies_women=freq["first_gender"], frequencies_men=freq["second_gender"],
                         n_attributes=n_attr, setting=setting, alpha=GEP_ASSUMPTION["alpha"],
                         target_half_width=target, **extra)
        except ValueError as exc:  # fewer than one image per gender and attribute
            out[setting] = {"images": images, "half_width": None, "note": str(exc)}
            continue
        out[setting] = {"images": p["images"], "images_per_cell": p["images_per_cell"], "answers": p["answers"],
                        "half_width": p["half_width"], "standard_error": p["standard_error"],
                        "expected_gep": p["expected_gep"], "true_gep": p["true_gep"],
                        "images_needed": p["images_needed"], "near_zero": p["gep_near_zero"],
                        "annotator_accuracy": p["assumptions"]["annotator_accuracy"],
                        "label_accuracy": p["assumptions"]["label_accuracy"],
                        "answers_per_question": p["answers"] / max(images * (n_attr if setting == NEUTRAL else 1), 1),
                        "attenuation": p["assumptions"]["label_accuracy"] - _wrong(extra, p)}
    return out


def _comparison(by_setting: dict[str, Any], difference: float, kind: str) -> dict[str, Any]:
    """Images per side to detect a true `difference` between two campaigns (or two settings) of this
    design with 80% power at the 5% level (two-sided), per setting (`comparison_images`)."""
    images = {}
    for setting, v in by_setting.items():
        se = v.get("standard_error")
        images[setting] = (comparison_images(se, v["images"], difference, 0.95, POWER, v.get("attenuation", 1.0))
                           if se is not None else None)
    return {"difference": difference, "unit": "STS percent points" if kind == PST else "GEP score",
            "power": POWER, "confidence": 0.95, "images_per_side": images,
            "model": "two independent campaigns or settings of this design, normal test of the difference of "
                     "their headline scores; label noise shrinks the true difference by the labels' "
                     "P(right) - P(wrong) (attenuation); the GEP score's bias near 0 is not modelled"}


def spec_planning(spec: dict[str, Any], summary: dict[str, Any], params: Any) -> dict[str, Any]:
    """`{"planning": {...}}` for the preview (docs/metrics.md, "Sample size planning")."""
    target = _target(params)
    kind = spec["kind"]
    difference = _target(params, "detect_difference") or DEFAULT_DIFFERENCE[kind]
    design = Design((spec.get("annotation") or {}).get("redundancy"), kind)
    by_setting = _pst(spec, summary, design, target) if kind == PST else _gep(spec, summary, design, target)
    headline_order = (PAIRED, SINGLE, INTERVENTION) if kind == PST else GEP_SETTINGS
    headline = next((s for s in headline_order if s in by_setting and by_setting[s].get("half_width") is not None),
                    None)
    block = {"statistic": "pst.overall (STS, percent points)" if kind == PST else "gep.score",
             "headline_setting": headline,
             "half_width": by_setting[headline]["half_width"] if headline else None,
             "by_setting": by_setting}
    planning: dict[str, Any] = {
        "assumption": {**(PST_ASSUMPTION if kind == PST else GEP_ASSUMPTION),
                       "redundancy": design.cfg if design.cfg is not None else design.r},
        "confidence": 0.95,
        "target_half_width": target,
        "pst": block if kind == PST else None,
        "gep": block if kind == GEP else None,
        "images_for_target": ({s: v.get("images_needed") for s, v in by_setting.items()} if target is not None
                              else None),
        "adaptive": design.block(),
        "comparison": _comparison(by_setting, difference, kind),
    }
    if kind == PST:
        planning["validity"] = _pst_validity(spec)
    return {"planning": planning}


def _pst_validity(spec: dict[str, Any]) -> dict[str, Any]:
    """What the design's images per identity allow (issue 22): the per-identity paired-minus-single
    gap interval needs MIN_GAP_PERSONS single persons per identity, a test of amplification
    MIN_AMPLIFICATION_IMAGES single images per identity and template."""
    from metrics.core.amplification import MIN_AMPLIFICATION_IMAGES
    from metrics.core.metric_intervals import MIN_GAP_PERSONS

    design = spec.get("design") or {}
    settings = design.get("settings") or []
    singles = int((design.get("samples") or {}).get("single") or 0) if SINGLE in settings else 0
    return {"single_images_per_identity_and_template": singles,
            "gap_interval_per_identity": {"needs": MIN_GAP_PERSONS, "computed": singles >= MIN_GAP_PERSONS},
            "amplification_test": {"needs": MIN_AMPLIFICATION_IMAGES, "computed": singles >= MIN_AMPLIFICATION_IMAGES}}
