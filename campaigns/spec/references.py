"""The spec's `references` section (PST): reference %F per identity with its provenance, what a
campaign's generated %F is compared with (the report's `amplification.<reference>`).

    "references": [{"name": "bls_2023", "source": "BLS 2023", "percent_female": {"nurse": 87.9, ...}}, ...]

`name`: letters, digits, `_` and `-` (it is a report key), unique; `source`: free text (e.g. "BLS 2023",
"LAION naive sample"); `percent_female`: identity -> percent (0..100) or null (no value: listed as not
covered). Identities of the design without a value are listed by the report, never dropped silently.

Without a `references` key the PST occupation preset takes the shipped labour statistics (PST paper
Table 14) as its default reference (`default_references`); `references_of(spec)` is what the report
uses. The same rows can come as a CSV upload (`parse_references_csv`, columns name, source, identity,
percent_female), all or nothing.
"""
from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from typing import Any

from common.inputs import BodyError, brief
from common.numbers import number
from common.uploads import csv_lines

from .. import presets
from .base import PST, Problems

NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_REFERENCES = 50
MAX_SOURCE_CHARS = 2000
DEFAULT_NAME = "labor_statistics"
CSV_COLUMNS = ("name", "source", "identity", "percent_female")


def _percent(value: Any, path: str, p: Problems) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        p.add(path, f"must be a number between 0 and 100 or null, got {brief(value)}")
        return None
    if not 0 <= value <= 100:
        p.add(path, f"must be between 0 and 100 (a percentage), got {value}")
        return None
    return float(value)


def normalize_references(value: Any, p: Problems, *, kind: Any, path: str = "references") -> list[dict[str, Any]]:
    """Validate the section (every problem named by its dotted path) and return it normalised."""
    if kind != PST:
        p.add(path, "references (%F per identity) apply to PST campaigns only")
        return []
    if not isinstance(value, list):
        p.add(path, "must be a list of {\"name\", \"source\", \"percent_female\"} objects")
        return []
    if len(value) > MAX_REFERENCES:
        p.add(path, f"at most {MAX_REFERENCES} references")
        return []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, ref in enumerate(value):
        here = f"{path}[{i}]"
        if not isinstance(ref, Mapping):
            p.add(here, "must be an object with name, source and percent_female")
            continue
        unknown = sorted(set(ref) - {"name", "source", "percent_female"})
        if unknown:
            p.add(f"{here}.{unknown[0]}", "unknown key (known: name, source, percent_female)")
        name = ref.get("name")
        if not isinstance(name, str) or not NAME_RE.match(name):
            p.add(f"{here}.name", f"must be 1-64 letters, digits, '_' or '-', got {brief(name)}")
            name = None
        elif name in seen:
            p.add(f"{here}.name", f"duplicate reference name {name!r}")
        source = ref.get("source")
        if not isinstance(source, str) or not source.strip():
            p.add(f"{here}.source", "must be a non-empty string (where the figures come from, e.g. \"BLS 2023\")")
            source = None
        elif len(source) > MAX_SOURCE_CHARS:
            p.add(f"{here}.source", f"is longer than {MAX_SOURCE_CHARS} characters")
        pf = ref.get("percent_female")
        values: dict[str, float | None] = {}
        if not isinstance(pf, Mapping) or not pf:
            p.add(f"{here}.percent_female", "must be a non-empty object {identity: percent or null}")
        else:
            for identity, v in pf.items():
                if not isinstance(identity, str) or not identity.strip():
                    p.add(f"{here}.percent_female", f"identity names must be non-empty strings, got {brief(identity)}")
                    continue
                values[identity] = _percent(v, f"{here}.percent_female.{identity}", p)
        if name is not None and source is not None:
            seen.add(name)
            out.append({"name": name, "source": source.strip(), "percent_female": values})
    return out


def default_references(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The PST occupation preset's default reference: the shipped labour statistics."""
    design = spec.get("design") or {}
    if spec.get("kind") == PST and design.get("aspect") == "occupation" and (
            design.get("identities") or {}).get("preset") == "occupation":
        return [{"name": DEFAULT_NAME, "source": presets.labor_stats_source(),
                 "percent_female": presets.labor_stats_percent_female()}]
    return []


def references_of(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The references the report compares with: the spec's own, or the preset's default."""
    return list(spec["references"]) if "references" in spec else default_references(spec)


def parse_references_csv(data: bytes) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """CSV rows (name, source, identity, percent_female; percent empty or N/A = no value) grouped into
    references, in first-seen order. Returns (references, errors by `rows.<line>` / `file`)."""
    errors: dict[str, list[str]] = {}
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return [], {"file": ["is not UTF-8 text"]}
    del text
    reader = csv.DictReader(csv_lines(data))
    try:
        header = [h.strip() for h in reader.fieldnames or []]
    except csv.Error as exc:  # a cell over 128 KB, a NUL: a 400 naming the line, never a 500
        return [], {"rows.1": [f"not valid CSV ({brief(str(exc))[1:-1]})"]}
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        return [], {"file": [f"missing column(s) {', '.join(missing)}; the columns are {', '.join(CSV_COLUMNS)}"]}
    refs: dict[str, dict[str, Any]] = {}
    try:
        records = list(reader)
    except csv.Error as exc:
        return [], {f"rows.{reader.line_num + 1}": [f"not valid CSV ({brief(str(exc))[1:-1]})"]}
    for line, raw in enumerate(records, start=2):
        row = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        here = f"rows.{line}"
        name, source, identity, pct = (row.get(c, "") for c in CSV_COLUMNS)
        if not NAME_RE.match(name):
            errors.setdefault(here, []).append(f"name must be 1-64 letters, digits, '_' or '-', got {brief(name)}")
            continue
        if not identity:
            errors.setdefault(here, []).append("identity is empty")
            continue
        if not source:
            errors.setdefault(here, []).append("source is empty (where the figures come from, e.g. BLS 2023)")
            continue
        value: float | None = None
        if pct and pct.upper() not in ("N/A", "NA"):
            try:  # common.numbers: short text, finite, 0..100
                value = number(pct, field="percent_female", kind="float", minimum=0, maximum=100)
            except BodyError:
                errors.setdefault(here, []).append(f"percent_female must be a number between 0 and 100, empty or "
                                                   f"N/A, got {brief(pct)}")
                continue
        ref = refs.setdefault(name, {"name": name, "source": source, "percent_female": {}})
        if source != ref["source"]:
            errors.setdefault(here, []).append(f"reference {name!r} has two sources ({ref['source']!r}, {source!r})")
            continue
        if identity in ref["percent_female"]:
            errors.setdefault(here, []).append(f"identity {identity!r} appears twice in reference {name!r}")
            continue
        ref["percent_female"][identity] = value
    if not refs and not errors:
        errors["file"] = ["no rows"]
    return list(refs.values()), errors


def design_identities(spec: Mapping[str, Any]) -> list[str]:
    """Every identity of a PST design, in design order."""
    groups = ((spec.get("design") or {}).get("identities") or {}).get("groups") or []
    return list(dict.fromkeys(i for g in groups for i in g.get("identities", [])))


def coverage(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The references in force with, per reference, the design's identities it has no value for
    (`uncovered`) and the identities it names that the design does not have (`not_in_design`)."""
    refs = references_of(spec)
    ids = design_identities(spec)
    return {
        "references": refs,
        "default": "references" not in spec,
        "uncovered": {r["name"]: [i for i in ids if r["percent_female"].get(i) is None] for r in refs},
        "not_in_design": {r["name"]: sorted(set(r["percent_female"]) - set(ids)) for r in refs},
    }
