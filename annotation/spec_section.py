"""The spec's `annotation` section: validation, defaults, and reading a campaign's settings.

Registered with `campaigns.spec.register_section("annotation", ...)` from AnnotationConfig.ready(),
so every campaign stores its annotation settings with every default written out. The keys are
documented in docs/annotation.md (a public contract, like the rest of the spec).
"""
from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from campaigns.presets import PST_INSTRUCTIONS_INTRO, PST_QUESTIONS, PST_SETTING_INSTRUCTIONS
from campaigns.spec import GEP, KINDS, PST, SETTINGS_BY_KIND, Problems, is_missing
from common.inputs import BodyError, brief
from common.numbers import number
from common.templates import template_problem

from .demographics import DEFAULT_PAY_FLOOR, validate_demographics, validate_pay_floor
from .families import ATTRIBUTE_CHOICES, PERSON_CHOICES
from .redundancy import validate_redundancy

__all__ = ["ATTRIBUTE_CHOICES", "PERSON_CHOICES", "annotation_settings", "validate_annotation"]

# PST: the paper's own wordings and instructions (its Table 10; campaigns.presets).
DEFAULT_QUESTIONS = {
    **PST_QUESTIONS,
    "attribute": "Do you see a person {phrase}?",
}
DEFAULT_SETTING_INSTRUCTIONS: dict[str, dict[str, str]] = {"pst": dict(PST_SETTING_INSTRUCTIONS), "gep": {}}
DEFAULT_INSTRUCTIONS = {
    "pst": PST_INSTRUCTIONS_INTRO,
    "gep": ("Answer Yes only if you confidently recognise the object ON the person (a person standing next to a "
            "rack of dresses is No). The image quality of the person does not matter."),
}
DEFAULT_CONSENT = (
    "You are taking part in a research study on how text-to-image models depict people. You will look at "
    "generated images and answer short questions about them. Your answers are stored with a pseudonymous "
    "annotator id and used only for research. Participation is voluntary; you may stop at any time. "
    "Some images may be of low quality or unexpected."
)

# key -> (default or None for "depends on kind", allowed types, minimum, maximum)
_NUMBERS: dict[str, tuple[Any, tuple[type, ...], float, float]] = {
    "hit_size": (None, (int,), 1, 100),
    "lease_minutes": (30, (int,), 1, 24 * 60),
    "gold_rate": (0.0, (int, float), 0.0, 0.9),
    "min_time_ms": (0, (int,), 0, 600_000),
    "max_fast_fraction": (0.5, (int, float), 0.0, 1.0),
    "min_gold_accuracy": (0.0, (int, float), 0.0, 1.0),
    "min_gold_answers": (5, (int,), 1, 10_000),
    "min_agreement": (0.0, (int, float), 0.0, 1.0),
    "min_agreement_answers": (20, (int,), 1, 100_000),
    "auto_approve_hours": (72, (int, float), 0, 24 * 365),
    "qualification_attempts_per_address": (10, (int,), 1, 100_000),
    "qualification_address_hours": (24, (int, float), 1, 24 * 365),
}
_KEYS = ("redundancy", *_NUMBERS, "instructions", "consent_text", "questions", "reward", "reward_per", "currency",
         "low_quality_action", "exclude_flagged_answers", "demographics", "example_images", "tie_policy",
         "setting_instructions", "pay_floor_usd_per_hour")


def default_hit_size(kind: str) -> int:
    """GEP: 10 questions per HIT (the paper's batches); PST: 5 whole images per HIT."""
    return 5 if kind == PST else 10


def validate_annotation(raw: Any, p: Problems, spec: Mapping[str, Any]) -> dict[str, Any]:
    """Normalise the `annotation` section: fill defaults, record a problem per bad field.

    Long because it is one check per documented key of the section (docs/annotation.md), in the
    documented order, each adding its problem and writing its default: splitting it would scatter one
    public contract over helpers that share the collector and the half-built result."""
    kind = spec.get("kind") if isinstance(spec, Mapping) else None
    kind = kind if kind in KINDS else GEP
    if is_missing(raw) or raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        p.add("annotation", "must be an object")
        raw = {}
    for key in raw:
        if key not in _KEYS:
            p.add(f"annotation.{key}", f"unknown key {key!r} (allowed: {', '.join(_KEYS)})")
    out: dict[str, Any] = {"redundancy": validate_redundancy(raw.get("redundancy"), p)}
    for key, (default, types, lo, hi) in _NUMBERS.items():
        if default is None:
            default = default_hit_size(kind)
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, types):
            p.add(f"annotation.{key}", f"must be {' or '.join(t.__name__ for t in types)}, got {value!r}")
            value = default
        elif not lo <= value <= hi:
            p.add(f"annotation.{key}", f"must be between {lo} and {hi}, got {value!r}")
            value = default
        out[key] = value
    for key, default in (("instructions", DEFAULT_INSTRUCTIONS[kind]), ("consent_text", DEFAULT_CONSENT),
                         ("currency", "USD")):
        value = raw.get(key, default)
        if not isinstance(value, str) or not value.strip():
            p.add(f"annotation.{key}", "must be a non-empty string")
            value = default
        out[key] = value
    by_setting = raw.get("setting_instructions", DEFAULT_SETTING_INSTRUCTIONS[kind])
    if not isinstance(by_setting, Mapping):
        p.add("annotation.setting_instructions", f"must be an object: setting -> text ({', '.join(SETTINGS_BY_KIND[kind])})")
        by_setting = DEFAULT_SETTING_INSTRUCTIONS[kind]
    out["setting_instructions"] = {}
    for key, value in by_setting.items():
        if key not in SETTINGS_BY_KIND[kind]:
            p.add(f"annotation.setting_instructions.{key}",
                  f"unknown setting {key!r} (allowed: {', '.join(SETTINGS_BY_KIND[kind])})")
        elif not isinstance(value, str) or not value.strip():
            p.add(f"annotation.setting_instructions.{key}", "must be a non-empty string")
        else:
            out["setting_instructions"][key] = value
    questions = raw.get("questions", {})
    if not isinstance(questions, Mapping):
        p.add("annotation.questions", "must be an object with single/left/right/attribute wordings")
        questions = {}
    norm_q = dict(DEFAULT_QUESTIONS)
    for key, value in questions.items():
        if key not in DEFAULT_QUESTIONS:
            p.add(f"annotation.questions.{key}", f"unknown wording {key!r} (allowed: {', '.join(DEFAULT_QUESTIONS)})")
            continue
        placeholder = "{phrase}" if key == "attribute" else "{identity}"
        if not isinstance(value, str) or not value.strip():
            p.add(f"annotation.questions.{key}", "must be a non-empty string")
            continue
        why = template_problem(value, ("phrase", "identity"))  # common.templates: no format spec
        if why:
            p.add(f"annotation.questions.{key}", f"bad placeholder: {why}; use {placeholder}")
            continue
        if placeholder not in value:
            p.add(f"annotation.questions.{key}", f"must contain {placeholder}")
            continue
        norm_q[key] = value
    out["questions"] = norm_q
    reward = raw.get("reward", "0.00")
    try:  # common.numbers: short text, finite, range checked before anything formats it
        amount = number(reward, field="annotation.reward", kind="decimal", minimum=0, maximum=1000)
        if amount != amount.quantize(Decimal("0.01")):
            raise BodyError("annotation.reward: more than 2 decimals")
        out["reward"] = f"{amount:.2f}"
    except BodyError:
        p.add("annotation.reward", f"must be a non-negative amount with at most 2 decimals, up to 1000, "
                                   f"got {brief(reward, 60)}")
        out["reward"] = "0.00"
    for key, allowed, default in (("reward_per", ("hit", "question"), "hit"),
                                  ("low_quality_action", ("block", "pause", "none"), "block"),
                                  ("tie_policy", ("tie",), "tie")):
        value = raw.get(key, default)
        if value not in allowed:
            p.add(f"annotation.{key}", f"must be one of {', '.join(allowed)}, got {value!r}")
            value = default
        out[key] = value
    out["demographics"] = validate_demographics(raw.get("demographics", False), p)
    out["pay_floor_usd_per_hour"] = validate_pay_floor(raw.get("pay_floor_usd_per_hour", DEFAULT_PAY_FLOOR), p)
    for key, default in (("exclude_flagged_answers", True),):
        value = raw.get(key, default)
        if not isinstance(value, bool):
            p.add(f"annotation.{key}", "must be true or false")
            value = default
        out[key] = value
    examples = raw.get("example_images", [])
    if not isinstance(examples, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in examples):
        p.add("annotation.example_images", "must be a list of image ids")
        examples = []
    out["example_images"] = examples
    return out


def annotation_settings(campaign: Any) -> dict[str, Any]:
    """A campaign's annotation settings with defaults filled (also for campaigns stored before the
    section existed). Invalid stored values fall back to the defaults rather than failing a request."""
    spec = campaign.spec if isinstance(campaign.spec, Mapping) else {}
    raw = spec.get("annotation") or {}
    return validate_annotation(raw, Problems(), {"kind": campaign.kind})


def register() -> None:
    from campaigns.spec import register_section

    register_section("annotation", validate_annotation)
