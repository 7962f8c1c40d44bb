"""Field validators shared by the PST and GEP designs (names, counts, settings, samples, templates, lists)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from common.inputs import brief
from common.templates import template_problem

from .. import presets
from .base import (
    _FORBIDDEN_IN_NAMES,
    Problems,
    _over,
    limit,
)

# --------------------------------------------------------------------------------------------
# Small typed readers that record problems instead of raising.
# --------------------------------------------------------------------------------------------
_MISSING = object()


def _check_keys(obj: Mapping[str, Any], allowed: tuple[str, ...], path: str, p: Problems) -> None:
    for key in obj:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            p.add(where, f"unknown key {brief(key)} (allowed: {', '.join(allowed)})")


def _name_ok(value: Any, path: str, p: Problems, what: str = "name") -> str | None:
    if not isinstance(value, str) or not value.strip():
        p.add(path, f"{what} must be a non-empty string")
        return None
    if any(ch in value for ch in _FORBIDDEN_IN_NAMES):
        p.add(path, f"{what} {brief(value)} must not contain '|', tabs or line breaks")
        return None
    if len(value) > 200:
        p.add(path, f"{what} is longer than 200 characters")
        return None
    return value.strip()


def _positive_int(value: Any, path: str, p: Problems, *, maximum: int | None = None,
                  setting: str = "SPEC_MAX_SAMPLES") -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        p.add(path, f"must be a positive integer, got {brief(value)}")
        return None
    if value < 1:
        p.add(path, f"must be a positive integer (1 or more), got {value}")
        return None
    top = maximum if maximum is not None else limit(setting)
    if value > top:
        p.add(path, f"must be at most {top:,}" + ("" if maximum is not None else f" ({setting})") + f", got {brief(value)}")
        return None
    return value


def _settings(value: Any, allowed: tuple[str, ...], path: str, p: Problems, default: list[str]) -> list[str]:
    if value is _MISSING:
        return list(default)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        p.add(path, f"must be a non-empty list drawn from {', '.join(allowed)}")
        return []
    out: list[str] = []
    for i, item in enumerate(value):
        if item not in allowed:
            p.add(f"{path}.{i}", f"unknown setting {brief(item)} (allowed: {', '.join(allowed)})")
        elif item in out:
            p.add(f"{path}.{i}", f"setting {brief(item)} is listed twice")
        else:
            out.append(item)
    return out


def _samples(value: Any, settings: list[str], defaults: Mapping[str, int], path: str, p: Problems) -> dict[str, int]:
    out = {s: defaults[s] for s in settings}
    if value is _MISSING:
        return out
    if isinstance(value, Mapping):
        for key, n in value.items():
            if key not in defaults:
                p.add(f"{path}.{key}", f"unknown setting {brief(key)} (allowed: {', '.join(defaults)})")
                continue
            checked = _positive_int(n, f"{path}.{key}", p)
            if checked is not None and key in out:
                out[key] = checked
        return out
    checked = _positive_int(value, path, p)
    if checked is not None:
        out = {s: checked for s in settings}
    return out


def _template(value: Any, required: tuple[str, ...], allowed: tuple[str, ...], path: str, p: Problems) -> str | None:
    if not isinstance(value, str) or not value.strip():
        p.add(path, "must be a non-empty string")
        return None
    if len(value) > limit("SPEC_MAX_TEXT_CHARS"):
        p.add(path, f"is {len(value):,} characters long; at most {limit('SPEC_MAX_TEXT_CHARS'):,} "
                    "(SPEC_MAX_TEXT_CHARS)")
        return None
    # common.templates: the documented placeholders only, no format spec, conversion or attribute.
    why = template_problem(value, allowed, required)
    if why:
        p.add(path, why)
        return None
    return value


MAX_TEMPLATES = 20  # prompt templates per setting


def _templates(value: Any, settings: list[str], spec: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]],
               defaults: Mapping[str, str], path: str, p: Problems) -> dict[str, str | list[str]]:
    """Per setting one template (a string), or several (a list of 2..MAX_TEMPLATES strings: every
    identity / context is rendered with each, bias-amplification Table 1). A list of one is one."""
    out: dict[str, str | list[str]] = {s: defaults[s] for s in settings}
    if value is _MISSING:
        return out
    if not isinstance(value, Mapping):
        p.add(path, "must be an object mapping a setting to its template (or a list of templates)")
        return out
    for key, tmpl in value.items():
        if key not in spec:
            p.add(f"{path}.{key}", f"unknown setting {brief(key)} (allowed: {', '.join(spec)})")
            continue
        required, allowed = spec[key]
        if isinstance(tmpl, list):
            if not tmpl or len(tmpl) > MAX_TEMPLATES:
                p.add(f"{path}.{key}", f"must be a template or a list of 1 to {MAX_TEMPLATES} templates")
                continue
            checked = [_template(t, required, allowed, f"{path}.{key}[{i}]", p) for i, t in enumerate(tmpl)]
            if len(set(tmpl)) != len(tmpl):
                p.add(f"{path}.{key}", "the same template appears twice")
                continue
            good = [c for c in checked if c is not None]
            if len(good) == len(checked) and key in out:
                out[key] = good[0] if len(good) == 1 else good
            continue
        one = _template(tmpl, required, allowed, f"{path}.{key}", p)
        if one is not None and key in out:
            out[key] = one
    return out


def template_list(templates: str | list[str]) -> list[str]:
    """The templates of a setting as a list (one template: a list of one)."""
    return [templates] if isinstance(templates, str) else list(templates)


def _named_list(value: Any, path: str, p: Problems, *, what: str, preset: Callable[[], list[Any]],
                needs_phrase: bool, setting: str) -> list[dict[str, str]]:
    """A list given as a preset name, strings (name = phrase) or {"name", "phrase"} objects."""
    if value is _MISSING or value in presets.GEP_LIST_PRESETS or value == "default":
        value = preset()
    elif isinstance(value, str):
        p.add(path, f"unknown preset {brief(value)} (known: {', '.join(presets.GEP_LIST_PRESETS)})")
        return []
    if not isinstance(value, list) or not value:
        p.add(path, f"must be a preset name or a non-empty list of {what}")
        return []
    if len(value) > limit(setting):
        p.add(path, _over(len(value), setting, what))
        return []
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        where = f"{path}.{i}"
        if isinstance(item, str):
            item = {"name": item, "phrase": item}
        if not isinstance(item, Mapping):
            p.add(where, "must be a string or an object with 'name' and 'phrase'")
            continue
        _check_keys(item, ("name", "phrase"), where, p)
        name = _name_ok(item.get("name"), f"{where}.name", p)
        phrase = item.get("phrase", name if not needs_phrase else None)
        if phrase is None:
            p.add(f"{where}.phrase", "is required")
            continue
        if not isinstance(phrase, str) or not phrase.strip():
            p.add(f"{where}.phrase", "must be a non-empty string")
            continue
        if len(phrase) > limit("SPEC_MAX_TEXT_CHARS"):
            p.add(f"{where}.phrase", f"is longer than {limit('SPEC_MAX_TEXT_CHARS'):,} characters (SPEC_MAX_TEXT_CHARS)")
            continue
        if name is None:
            continue
        if name in seen:
            p.add(f"{where}.name", f"{what[:-1] if what.endswith('s') else what} {brief(name)} is listed twice")
            continue
        seen.add(name)
        out.append({"name": name, "phrase": phrase.strip()})
    return out
