from typing import Any

from django import template

register = template.Library()


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def pct(value: Any) -> str:
    """0.873 -> '87.3%' (None -> '–')."""
    if value is None:
        return "–"
    return f"{100 * float(value):.1f}%"


@register.filter
def seconds(ms: Any) -> str:
    if ms is None:
        return "–"
    return f"{float(ms) / 1000:.1f} s"
