"""The one way a number from outside (a spec value, a CSV cell, a form field, a query parameter, an
archive row) becomes a Decimal, an int or a float: finite, inside the field's own range, from a short
text, and a 400 naming the field otherwise.

`Decimal("1e200000000")` is a valid, finite Decimal; formatting it writes 200 MB, and
`Decimal("1e999999999999")` cannot be formatted at all (MemoryError). `float("inf")` and
`int(float("1e400"))` fail far from where the value came in. Here the text is short (at most
`MAX_TEXT` characters), the value is compared with the field's bounds before anything formats or
converts it, and NaN and infinities are refused. A source check (tests/security/test_parser_guards.py)
fails on `Decimal(` / `float(` of outside input in the modules that read it.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Literal, overload

from .inputs import BodyError, brief

MAX_TEXT = 40


def _bad(field: str, why: str) -> BodyError:
    return BodyError(f"{field}: {why}.", errors={field: [why]})


def _span(lo: Any, hi: Any) -> str:
    return f"between {lo} and {hi}"


@overload
def number(value: Any, *, field: str, kind: Literal["decimal"], minimum: Any, maximum: Any,
           places: int | None = ..., currency: bool = ...) -> Decimal: ...
@overload
def number(value: Any, *, field: str, kind: Literal["int"], minimum: Any, maximum: Any,
           places: int | None = ..., currency: bool = ...) -> int: ...
@overload
def number(value: Any, *, field: str, kind: Literal["float"], minimum: Any, maximum: Any,
           places: int | None = ..., currency: bool = ...) -> float: ...


def number(value: Any, *, field: str, kind: str, minimum: Any, maximum: Any, places: int | None = None,
           currency: bool = False) -> Any:
    """`value` (text, int, float or Decimal) as a `kind` ("decimal", "int" or "float") in
    [minimum, maximum]; `places` rounds a decimal (half-even) after the range check; `currency`
    accepts one leading `$` (MTurk writes "$0.10"). Raises BodyError (400) naming `field`."""
    want = {"decimal": "an amount", "int": "a whole number", "float": "a number"}[kind]
    range_text = f"must be {want} {_span(minimum, maximum)}"
    if isinstance(value, bool) or value is None:
        raise _bad(field, range_text)
    if isinstance(value, str):
        text = value.strip()
        if currency and text.startswith("$"):
            text = text[1:].strip()
        if not text or len(text) > MAX_TEXT:
            raise _bad(field, f"{range_text}, got {brief(value, 60)}")
        try:
            parsed = Decimal(text)
        except (InvalidOperation, ValueError):
            raise _bad(field, f"{range_text}, got {brief(value, 60)}") from None
    elif isinstance(value, (int, Decimal)):
        parsed = Decimal(value)
    elif isinstance(value, float):
        parsed = Decimal(repr(value)) if value == value and abs(value) != float("inf") else Decimal("NaN")
    else:
        raise _bad(field, f"{range_text}, got {type(value).__name__}")
    if not parsed.is_finite():
        raise _bad(field, f"{range_text} (NaN and infinities are not accepted)")
    if not Decimal(minimum) <= parsed <= Decimal(maximum):
        raise _bad(field, f"{range_text}, got {brief(value, 60) if isinstance(value, str) else 'a value out of range'}")
    if kind == "int":
        if parsed != parsed.to_integral_value():
            raise _bad(field, f"{range_text}, got {brief(value, 60)}")
        return int(parsed)
    if kind == "float":
        return float(parsed)
    if places is not None:
        parsed = parsed.quantize(Decimal(1).scaleb(-places))
    return parsed


def amount_text(value: Any, *, field: str, maximum: Any, places: int = 2) -> str:
    """A money amount from outside as the text a spec stores ("0.10"): non-negative, at most `maximum`."""
    return f"{number(value, field=field, kind='decimal', minimum=0, maximum=maximum, places=places):.{places}f}"
