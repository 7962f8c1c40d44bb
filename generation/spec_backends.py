"""Validation of a spec's `backend` section, one validator per backend (registered with campaigns)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaigns.spec import Problems, register_backend
from common.inputs import BodyError, brief
from common.numbers import number
from common.outbound import OutboundBlocked, check_url

DIFFUSERS_DEFAULTS: dict[str, Any] = {
    "revision": None, "steps": 50, "guidance": 7.5, "scheduler": None, "negative_prompt": "",
    "width": None, "height": None, "batch_size": 4, "dtype": "auto", "safety_checker": True,
}
MAX_SIDE = 4096  # pixels of a generated image's side (the placeholder's bound too)
OPENAI_DEFAULTS: dict[str, Any] = {
    "model": "dall-e-3", "size": "1024x1024", "quality": "standard", "style": None, "api_base": None,
}


def _typed(backend: Mapping[str, Any], defaults: Mapping[str, Any], types: Mapping[str, tuple[type, ...]],
           p: Problems) -> dict[str, Any]:
    out: dict[str, Any] = {"name": backend["name"]}
    allowed = ("name", *defaults)
    for key in backend:
        if key not in allowed:
            p.add(f"backend.{key}", f"unknown parameter {brief(key)} for backend {brief(backend['name'])} "
                                    f"(allowed: {', '.join(allowed)})")
    for key, default in defaults.items():
        value = backend.get(key, default)
        if value is not None and key in types:
            allowed_types = types[key]
            wrong_bool = isinstance(value, bool) and bool not in allowed_types
            if wrong_bool or not isinstance(value, allowed_types):
                p.add(f"backend.{key}", f"must be {' or '.join(t.__name__ for t in allowed_types)}, got {brief(value)}")
        out[key] = value
    return out


def _positive(out: dict[str, Any], key: str, p: Problems, *, maximum: int) -> None:
    value = out.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and not (1 <= value <= maximum):
        p.add(f"backend.{key}", f"must be between 1 and {maximum}, got {value}")


def validate_diffusers(backend: Mapping[str, Any], p: Problems, spec: Mapping[str, Any]) -> dict[str, Any]:
    defaults = {"model": None, **DIFFUSERS_DEFAULTS}
    out = _typed(backend, defaults, {
        "model": (str,), "revision": (str,), "steps": (int,), "guidance": (int, float), "scheduler": (str,),
        "negative_prompt": (str,), "width": (int,), "height": (int,), "batch_size": (int,), "dtype": (str,),
        "safety_checker": (bool,),
    }, p)
    if not isinstance(out.get("model"), str) or not out["model"].strip():
        p.add("backend.model", "is required: a model id (e.g. runwayml/stable-diffusion-v1-5) or a local path")
    _positive(out, "steps", p, maximum=1000)
    _positive(out, "batch_size", p, maximum=64)
    for key in ("width", "height"):
        if isinstance(out.get(key), int) and (out[key] < 8 or out[key] % 8 or out[key] > MAX_SIDE):
            p.add(f"backend.{key}", f"must be a multiple of 8 from 8 to {MAX_SIDE}")
    if isinstance(out.get("guidance"), (int, float)) and not isinstance(out["guidance"], bool):
        try:  # a finite, bounded number (a 400-digit integer would overflow the worker's float)
            out["guidance"] = number(out["guidance"], field="backend.guidance", kind="float", minimum=0, maximum=100)
        except BodyError:
            p.add("backend.guidance", "must be a number between 0 and 100")
    if out.get("dtype") not in ("auto", "float16", "bfloat16", "float32"):
        p.add("backend.dtype", "must be one of auto, float16, bfloat16, float32")
    return out


def validate_openai(backend: Mapping[str, Any], p: Problems, spec: Mapping[str, Any]) -> dict[str, Any]:
    out = _typed(backend, OPENAI_DEFAULTS, {"model": (str,), "size": (str,), "quality": (str,), "style": (str,),
                                            "api_base": (str,)}, p)
    for key in ("model", "size", "quality", "style"):
        if isinstance(out.get(key), str) and len(out[key]) > 200:
            p.add(f"backend.{key}", "is longer than 200 characters")
    if isinstance(out.get("api_base"), str):
        # The deployment's key is sent there: only a base the deployment lists (OPENAI_API_BASES).
        try:
            check_url(out["api_base"], allowed_bases=openai_api_bases(), what="backend.api_base")
        except OutboundBlocked as exc:
            p.add("backend.api_base", str(exc))
    return out


def openai_api_bases() -> list[str]:
    from django.conf import settings

    return list(getattr(settings, "OPENAI_API_BASES", ["https://api.openai.com"]))


def validate_placeholder(backend: Mapping[str, Any], p: Problems, spec: Mapping[str, Any]) -> dict[str, Any]:
    out = _typed(backend, {"width": 512, "height": 512, "delay_s": 0.0}, {
        "width": (int,), "height": (int,), "delay_s": (int, float)}, p)
    _positive(out, "width", p, maximum=4096)
    _positive(out, "height", p, maximum=4096)
    if isinstance(out.get("delay_s"), (int, float)) and not 0 <= out["delay_s"] <= 60:
        p.add("backend.delay_s", "must be between 0 and 60 seconds")
    return out


def validate_import(backend: Mapping[str, Any], p: Problems, spec: Mapping[str, Any]) -> dict[str, Any]:
    return _typed(backend, {"model": "", "note": ""}, {"model": (str,), "note": (str,)}, p)


def register() -> None:
    register_backend("diffusers", validate_diffusers)
    register_backend("openai", validate_openai)
    register_backend("placeholder", validate_placeholder)
    register_backend("import", validate_import)
