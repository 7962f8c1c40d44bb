"""The spec's `dataset` section (registered by MetricsConfig.ready): what the replication package's
dataset card says about reuse. `{"license": "<SPDX id or 'unknown'>", "citation": "<free text>"}`,
both optional; the license defaults to "unknown" (the card then asks readers to contact the owner)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaigns.spec import Problems, is_missing

DEFAULTS = {"license": "unknown", "citation": ""}
MAX_CHARS = {"license": 100, "citation": 5000}


def validate_dataset(raw: Any, p: Problems, spec: Mapping[str, Any]) -> dict[str, Any]:
    if is_missing(raw) or raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        p.add("dataset", "must be an object with optional 'license' and 'citation'")
        return dict(DEFAULTS)
    out = dict(DEFAULTS)
    for key, value in raw.items():
        if key not in DEFAULTS:
            p.add(f"dataset.{key}", "unknown key (allowed: license, citation)")
        elif not isinstance(value, str):
            p.add(f"dataset.{key}", "must be a string")
        elif len(value) > MAX_CHARS[key] or (key == "license" and ("\n" in value or not value.strip())):
            p.add(f"dataset.{key}", f"must be one line of at most {MAX_CHARS[key]} characters" if key == "license"
                  else f"must be at most {MAX_CHARS[key]} characters")
        else:
            out[key] = value.strip() if key == "license" else value
    return out
