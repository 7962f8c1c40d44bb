"""The GEP design section: genders, attributes, contexts, settings, samples and templates."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import presets
from .base import (
    GEP_SETTINGS,
    Problems,
)
from .fields import (
    _MISSING,
    _check_keys,
    _named_list,
    _samples,
    _settings,
    _templates,
)

# --------------------------------------------------------------------------------------------
# GEP
# --------------------------------------------------------------------------------------------
_GEP_DESIGN_KEYS = ("settings", "samples", "genders", "attributes", "contexts", "templates", "baseline_gender")
_GEP_TEMPLATE_SPEC = {
    "neutral": (("gender", "context"), ("gender", "context")),
    "explicit": (("gender", "attribute", "context"), ("gender", "attribute", "context")),
}


def _normalize_gep(design: Mapping[str, Any], seed: int, p: Problems) -> dict[str, Any]:
    path = "design"
    _check_keys(design, _GEP_DESIGN_KEYS, path, p)
    settings = _settings(design.get("settings", _MISSING), GEP_SETTINGS, f"{path}.settings", p,
                         list(GEP_SETTINGS))
    samples = _samples(design.get("samples", _MISSING), settings, dict.fromkeys(GEP_SETTINGS, presets.GEP_SAMPLES),
                       f"{path}.samples", p)
    base = presets.gep()
    genders = _named_list(design.get("genders", _MISSING), f"{path}.genders", p, what="genders",
                          preset=lambda: base["genders"], needs_phrase=False, setting="SPEC_MAX_GENDERS")
    if genders and len(genders) < 2:
        p.add(f"{path}.genders", "list at least two genders (the GEP vector is first minus second)")
    attributes = _named_list(design.get("attributes", _MISSING), f"{path}.attributes", p, what="attributes",
                             preset=lambda: base["attributes"], needs_phrase=True, setting="SPEC_MAX_ATTRIBUTES")
    contexts_raw = design.get("contexts", _MISSING)
    contexts = _named_list(contexts_raw, f"{path}.contexts", p, what="contexts",
                           preset=lambda: base["contexts"], needs_phrase=False, setting="SPEC_MAX_CONTEXTS")
    templates = _templates(design.get("templates", _MISSING), settings, _GEP_TEMPLATE_SPEC,
                           presets.GEP_TEMPLATES, f"{path}.templates", p)
    out = {"settings": settings, "samples": samples, "genders": genders, "attributes": attributes,
           "contexts": contexts, "templates": templates}
    if "baseline_gender" in design:
        # GEP section 7: with more than two genders the report gives each gender's distance from this one.
        baseline = design["baseline_gender"]
        names = [g["name"] for g in genders or []]
        if not isinstance(baseline, str) or (names and baseline not in names):
            p.add(f"{path}.baseline_gender", f"must be the name of one of design.genders ({', '.join(names)})")
        else:
            out["baseline_gender"] = baseline
    return out
