"""The spec's `autolabel` section (issue 15; docs/autolabel.md):

    {"labellers": [{"name": "clip_cls", "model": "openai/clip-vit-large-patch14", ...}],
     "human_sample": {"fraction": 0.2, "seed": 1}}

`labellers` (optional): the machine labellers the campaign runs, each with its options (below,
defaults written out). `human_sample` (optional, null = every image goes to humans): only a seeded
uniform random sample of the images, `fraction` of each stratum (setting, and for GEP the attribute),
is opened to human annotation. A `vlm` labeller names an endpoint of the deployment's
AUTOLABEL_VLM_ENDPOINTS, never a URL. Registered by the autolabel app (`register()`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.templates import template_problem

from .base import Problems, register_section
from .fields import _check_keys

CLIP_MODEL = "openai/clip-vit-large-patch14"
BLIP_MODEL = "Salesforce/blip-vqa-base"
VLM_PROMPT = "{question}\nAnswer with exactly one of: {choices}."
_MODEL = ("model", str, CLIP_MODEL)
_REVISION = ("revision", (str, type(None)), None)
# name -> [(option, allowed types, default)]; numbers are range-checked in _RANGES.
OPTIONS: dict[str, list[tuple[str, Any, Any]]] = {
    "clip": [_MODEL, _REVISION, ("threshold", (int, float), 0.2)],
    "clip_cc": [_MODEL, _REVISION, ("reference", str, "an object")],
    "clip_cls": [_MODEL, _REVISION, ("seed", (int, type(None)), None), ("ensemble", int, 10),
                 ("threshold", (int, float), 0.5), ("genders", list, ["A woman", "A man", "A person"])],
    "clip_gender": [_MODEL, _REVISION, ("threshold", (int, float), 0.9),
                    ("prompts", dict, {"Feminine": "a photo of a woman", "Masculine": "a photo of a man"})],
    "vqa": [("model", str, BLIP_MODEL), _REVISION, ("max_new_tokens", int, 10), ("batch_size", int, 16)],
    "vlm": [("endpoint", str, None), ("model", str, None), ("prompt", str, VLM_PROMPT),
            ("max_tokens", int, 20), ("temperature", (int, float), 0.0)],
}
_RANGES = {"threshold": (0.0, 1.0), "ensemble": (1, 50), "max_new_tokens": (1, 100), "batch_size": (1, 512),
           "max_tokens": (1, 4096), "temperature": (0.0, 2.0), "seed": (0, 2**31 - 1)}
LABELLERS = tuple(OPTIONS)
VLM_PROMPT_MAX_CHARS = 4000


def _vlm_endpoints() -> dict[str, Any]:
    try:
        from django.conf import settings

        return dict(getattr(settings, "AUTOLABEL_VLM_ENDPOINTS", {}) or {}) if settings.configured else {}
    except ImportError:  # pragma: no cover
        return {}


def labeller_config(raw: Any, path: str, p: Problems) -> dict[str, Any] | None:
    """One labeller entry, every option checked and defaulted (None when it has problems)."""
    if not isinstance(raw, Mapping):
        p.add(path, "must be an object with at least 'name'")
        return None
    name = raw.get("name")
    if name not in OPTIONS:
        p.add(f"{path}.name", f"unknown labeller {name!r} (known: {', '.join(LABELLERS)})")
        return None
    before = len(p.errors)
    _check_keys(raw, ("name", *(o for o, _, _ in OPTIONS[name])), path, p)
    out: dict[str, Any] = {"name": name}
    for option, types, default in OPTIONS[name]:
        value = raw.get(option, default)
        where = f"{path}.{option}"
        if value is None and default is None and option in ("endpoint", "model"):
            p.add(where, "is required")
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            p.add(where, f"has the wrong type ({type(value).__name__})")
            continue
        if option in _RANGES and isinstance(value, (int, float)):
            lo, hi = _RANGES[option]
            if not lo <= value <= hi:
                p.add(where, f"must be between {lo} and {hi}")
        if isinstance(value, str) and not value.strip() and option != "reference":
            p.add(where, "must not be empty")
        out[option] = value
    if name == "clip_cls" and isinstance(out.get("genders"), list):
        if not out["genders"] or not all(isinstance(g, str) and g.strip() for g in out["genders"]):
            p.add(f"{path}.genders", "must be a non-empty list of strings")
    if name == "clip_gender" and isinstance(out.get("prompts"), Mapping):
        if set(out["prompts"]) != {"Feminine", "Masculine"} or not all(isinstance(v, str) and v.strip()
                                                                       for v in out["prompts"].values()):
            p.add(f"{path}.prompts", "must map exactly Feminine and Masculine to texts")
    if name == "vlm" and isinstance(out.get("endpoint"), str):
        endpoints = _vlm_endpoints()
        if out["endpoint"] not in endpoints:
            p.add(f"{path}.endpoint", f"unknown endpoint {out['endpoint']!r}: this deployment allows "
                                      f"{', '.join(sorted(endpoints)) or 'none'} (AUTOLABEL_VLM_ENDPOINTS)")
    if name == "vlm" and isinstance(out.get("prompt"), str):
        # common.templates: {question} and {choices} only, no format spec ({choices:>150000000}).
        why = template_problem(out["prompt"], ("question", "choices"), required=("question",))
        if why is None and len(out["prompt"]) > VLM_PROMPT_MAX_CHARS:
            why = f"is longer than {VLM_PROMPT_MAX_CHARS} characters"
        if why:
            p.add(f"{path}.prompt", why)
    return out if len(p.errors) == before else None


def validate_autolabel(raw: Any, p: Problems, spec: Mapping[str, Any]) -> dict[str, Any]:
    from .normalize import is_missing

    if is_missing(raw) or raw is None:
        return {"labellers": [], "human_sample": None}
    if not isinstance(raw, Mapping):
        p.add("autolabel", "must be an object")
        return {"labellers": [], "human_sample": None}
    _check_keys(raw, ("labellers", "human_sample"), "autolabel", p)
    labellers: list[dict[str, Any]] = []
    raw_list = raw.get("labellers", [])
    if not isinstance(raw_list, list):
        p.add("autolabel.labellers", "must be a list")
        raw_list = []
    seen = set()
    for i, entry in enumerate(raw_list):
        cfg = labeller_config(entry, f"autolabel.labellers.{i}", p)
        if cfg is None:
            continue
        if cfg["name"] in seen:
            p.add(f"autolabel.labellers.{i}.name", f"{cfg['name']} is listed twice")
        seen.add(cfg["name"])
        labellers.append(cfg)
    sample = raw.get("human_sample")
    norm_sample = None
    if sample is not None:
        if not isinstance(sample, Mapping):
            p.add("autolabel.human_sample", "must be an object with fraction and seed")
        else:
            _check_keys(sample, ("fraction", "seed"), "autolabel.human_sample", p)
            fraction = sample.get("fraction")
            seed = sample.get("seed", spec.get("seed", 0))
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
                p.add("autolabel.human_sample.fraction", "must be a number in (0, 1]")
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**63 - 1:
                p.add("autolabel.human_sample.seed", "must be a non-negative integer")
            norm_sample = {"fraction": fraction, "seed": seed}
    return {"labellers": labellers, "human_sample": norm_sample}


def register() -> None:
    register_section("autolabel", validate_autolabel)
