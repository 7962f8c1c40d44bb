"""Text templates from outside (prompt templates, question wordings, the VLM prompt, the MTurk
mapping's column names): `{name}` placeholders only, from a documented list, with no format spec,
conversion, attribute or index (`{choices:>150000000}` would allocate 150 MB per use,
`{question.__class__}` would reach into objects). `template_problem` is checked when the spec (or
mapping) is validated; `template_fill` is the one way a template is filled, and it never applies a
format spec, whatever got stored.
"""
from __future__ import annotations

import string
from collections.abc import Iterable
from typing import Any

from .inputs import brief

_FORMATTER = string.Formatter()


def template_problem(value: Any, allowed: Iterable[str], required: Iterable[str] = ()) -> str | None:
    """Why `value` is not an acceptable template, or None."""
    if not isinstance(value, str):
        return "must be text"
    allowed = tuple(allowed)
    shown = ", ".join("{" + a + "}" for a in allowed)
    try:
        parts = list(_FORMATTER.parse(value))
    except ValueError as exc:
        return f"is not a valid template: {exc} (write {{{{ and }}}} for literal braces)"
    names = []
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if spec or conversion:
            return (f"placeholder {brief('{' + field + '}', 60)} may not carry a format spec or conversion "
                    f"(write plain {shown})")
        if field not in allowed:
            return f"unknown placeholder {brief('{' + field + '}', 60)} (allowed: {shown})"
        names.append(field)
    for name in required:
        if name not in names:
            return f"template is missing {{{name}}}"
    return None


def template_fill(template: str, **values: Any) -> str:
    """The template with each `{name}` replaced by str(value); format specs and conversions are
    ignored, and an unknown name is a KeyError (validated templates have none)."""
    out = []
    for literal, field, _, _ in _FORMATTER.parse(template):
        out.append(literal)
        if field is not None:
            out.append(str(values[field]))
    return "".join(out)
