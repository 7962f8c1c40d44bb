"""Campaign specs: parse, validate, normalise (fill the papers' defaults) and expand into prompts.

A spec is plain data (JSON or YAML). The public format, version 1, is documented in
docs/spec.md. `spec_normalize` returns the full spec with every default written out (so a stored
campaign says exactly what it ran) or raises `SpecError` listing every problem by its dotted field
path. `spec_expand` turns a normalised spec into `PromptPlan`s: a stable key, the setting, the text,
structured metadata and one seed per sample. Everything random derives from the campaign seed, so
the same spec always gives the same prompts and seeds.

This package is pure Python (no Django models), so it can be used and tested on its own.
"""
# The package's public face: plug-ins (register_section, register_backend) and callers import from
# `campaigns.spec`; the modules below are where each part lives.
from .base import (  # noqa: F401
    ALL_SETTINGS,
    EXPLICIT,
    GEP,
    GEP_SETTINGS,
    INTERVENTION,
    KINDS,
    LIMIT_DEFAULTS,
    MAX_PROMPTS,
    MAX_SAMPLES,
    NEUTRAL,
    PAIRED,
    PST,
    PST_ASPECTS,
    PST_SETTINGS,
    SETTINGS_BY_KIND,
    SINGLE,
    SPEC_VERSION,
    STEREOTYPES,
    Problems,
    SectionValidator,
    SpecError,
    derive_seed,
    known_backends,
    limit,
    register_backend,
    register_section,
    spec_load_text,
)
from .expand import PromptPlan, spec_count_images, spec_count_prompts, spec_expand, spec_summary  # noqa: F401
from .normalize import is_missing, spec_normalize  # noqa: F401

__all__ = [
    "SPEC_VERSION",
    "KINDS",
    "PST_ASPECTS",
    "PST_SETTINGS",
    "GEP_SETTINGS",
    "PST",
    "GEP",
    "SINGLE",
    "PAIRED",
    "INTERVENTION",
    "NEUTRAL",
    "EXPLICIT",
    "SETTINGS_BY_KIND",
    "ALL_SETTINGS",
    "STEREOTYPES",
    "LIMIT_DEFAULTS",
    "MAX_SAMPLES",
    "MAX_PROMPTS",
    "SectionValidator",
    "register_section",
    "register_backend",
    "known_backends",
    "SpecError",
    "Problems",
    "limit",
    "derive_seed",
    "spec_load_text",
    "spec_normalize",
    "is_missing",
    "PromptPlan",
    "spec_expand",
    "spec_count_prompts",
    "spec_count_images",
    "spec_summary",
]
