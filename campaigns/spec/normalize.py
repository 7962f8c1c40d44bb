"""`spec_normalize`: the whole spec, every default written out, or a SpecError listing every problem."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.inputs import BodyError, brief, check_tree

from .base import (
    GEP,
    KINDS,
    PST,
    SPEC_VERSION,
    Problems,
    SpecError,
    _backend_validators,
    _section_validators,
    known_backends,
    limit,
)
from .expand import spec_count_images, spec_count_prompts
from .fields import (
    _check_keys,
    _name_ok,
)
from .gep import _normalize_gep
from .pst import _normalize_pst
from .references import normalize_references

# --------------------------------------------------------------------------------------------
# The whole spec
# --------------------------------------------------------------------------------------------
_TOP_KEYS = ("version", "name", "kind", "seed", "description", "design", "backend", "annotation", "references")


def spec_normalize(raw: Any) -> dict[str, Any]:
    """Validate a spec and return it with every default written out. Raises SpecError."""
    p = Problems()
    if not isinstance(raw, Mapping):
        p.add("spec", "must be an object (JSON/YAML mapping)")
        p.raise_if_any()
    try:
        # Whatever door the spec came through (API, console, CLI, archive): clean text, bounded depth.
        check_tree(raw)
    except BodyError as exc:
        raise SpecError(f"Invalid campaign spec: {exc.message}", errors=exc.errors) from None
    _check_keys(raw, tuple(dict.fromkeys((*_TOP_KEYS, *_section_validators))), "", p)
    version = raw.get("version", SPEC_VERSION)
    if version != SPEC_VERSION:
        p.add("version", f"unsupported spec version {brief(version)} (this product reads version {SPEC_VERSION})")
    name = _name_ok(raw.get("name"), "name", p)
    kind = raw.get("kind")
    if kind not in KINDS:
        p.add("kind", f"must be one of {', '.join(KINDS)}, got {brief(kind)}")
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0 or seed > 2**63 - 1:
        p.add("seed", f"must be a non-negative integer, got {brief(seed)}")
        seed = 0
    description = raw.get("description", "")
    if not isinstance(description, str):
        p.add("description", "must be a string")
        description = ""
    elif len(description) > 10 * limit("SPEC_MAX_TEXT_CHARS"):
        p.add("description", f"is longer than {10 * limit('SPEC_MAX_TEXT_CHARS'):,} characters (10 x SPEC_MAX_TEXT_CHARS)")
    design = raw.get("design", {})
    if not isinstance(design, Mapping):
        p.add("design", "must be an object")
        design = {}
    norm_design: dict[str, Any] = {}
    if kind == PST:
        norm_design = _normalize_pst(design, seed, p)
    elif kind == GEP:
        norm_design = _normalize_gep(design, seed, p)

    backend = raw.get("backend")
    norm_backend: Any = None
    if not isinstance(backend, Mapping):
        p.add("backend", "must be an object with at least 'name'")
    elif backend.get("name") not in _backend_validators:
        p.add("backend.name", f"unknown backend {brief(backend.get('name'))} (known: {', '.join(known_backends())})")
    else:
        norm_backend = _backend_validators[backend["name"]](backend, p, raw)

    out: dict[str, Any] = {"version": SPEC_VERSION, "name": name, "kind": kind, "seed": seed,
                           "description": description, "design": norm_design, "backend": norm_backend}
    for section, validator in _section_validators.items():
        out[section] = validator(raw.get(section, _MISSING_SECTION), p, raw)
    if "references" in raw:
        out["references"] = normalize_references(raw["references"], p, kind=kind)
    for section in ("annotation",):
        if section not in _section_validators and section in raw:
            if not isinstance(raw[section], Mapping):
                p.add(section, "must be an object")
            else:
                out[section] = dict(raw[section])
    p.raise_if_any()
    # Counted from the list lengths, before anything is expanded.
    prompts, images = spec_count_prompts(out), spec_count_images(out)
    if prompts > limit("MAX_PROMPTS_PER_CAMPAIGN"):
        p.add("design", f"the design expands to {prompts:,} prompts; this deployment allows at most "
                        f"{limit('MAX_PROMPTS_PER_CAMPAIGN'):,} (MAX_PROMPTS_PER_CAMPAIGN): split it into several campaigns")
    if images > limit("MAX_IMAGES_PER_CAMPAIGN"):
        p.add("design", f"the design plans {images:,} images; this deployment allows at most "
                        f"{limit('MAX_IMAGES_PER_CAMPAIGN'):,} (MAX_IMAGES_PER_CAMPAIGN): fewer samples or a smaller design, "
                        "or several campaigns")
    p.raise_if_any()
    return out


class _MissingSection:
    """Passed to a section validator when the spec has no such section (it fills defaults)."""

    def __repr__(self) -> str:
        return "<missing>"


_MISSING_SECTION = _MissingSection()


def is_missing(value: Any) -> bool:
    return value is _MISSING_SECTION
