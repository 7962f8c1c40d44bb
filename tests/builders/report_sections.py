"""What "every section of the report has data" means, for the demo's reports (issue 25): the
sections a report of this kind and source must hold, and the empty places inside them.

A place inside a section may be empty only when there is nothing to list (`missing`, `uncovered`,
`not_in_design`: references that cover the design; `comparison` of a one-setting design) or when a
warning of the report names it or a section above it (a figure left out, and why)."""
from __future__ import annotations

from typing import Any

# The sections a report must hold, by campaign kind and label source kind.
SECTIONS = {"pst": ("agreement", "pst", "amplification", "annotators", "redundancy", "summary"),
            "gep": ("agreement", "gep", "annotators", "summary")}
SOURCE_SECTIONS = {"machine": ("source", "auto"), "hybrid": ("source", "auto", "hybrid")}
GEP_SOURCE_SECTIONS = ("clipscore",)
NOTHING_TO_LIST = {"missing", "uncovered", "not_in_design", "comparison", "warnings"}
# The same, only under one section: amplification's per-template `excluded` (no identity left out of the
# template's mean; which ones are depends on the simulated labels, i.e. on the ids). The PST section's own
# `excluded` (the STS under the other treatment) must hold data.
NOTHING_TO_LIST_IN = {"amplification": {"excluded"}}


def expected_sections(kind: str, source_kind: str | None) -> tuple[str, ...]:
    extra = SOURCE_SECTIONS.get(source_kind or "", ())
    return SECTIONS[kind] + extra + (GEP_SOURCE_SECTIONS if kind == "gep" and source_kind else ())


def _empty_places(value: Any, path: str) -> list[str]:
    if isinstance(value, dict):
        if not value:
            return [path]
        return [p for k, v in value.items() for p in _empty_places(v, f"{path}.{k}")]
    if isinstance(value, list) and not value:
        return [path]
    return []


def empty_sections(report: dict[str, Any], kind: str, source_kind: str | None = None) -> list[str]:
    """The sections missing or empty, and the empty places inside them that no warning explains."""
    warned = [str(w.get("path", "")) for w in report.get("warnings") or []]
    out = []
    for key in expected_sections(kind, source_kind):
        section = report.get(key)
        if not section:
            out.append(f"{key} (missing or empty)")
            continue
        for place in _empty_places(section, key):
            last = place.rsplit(".", 1)[-1]
            if last in NOTHING_TO_LIST or last in NOTHING_TO_LIST_IN.get(key, set()):
                continue
            if any(place == w or place.startswith(w + ".") for w in warned):
                continue
            out.append(place)
    return out
