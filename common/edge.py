"""Request bodies declared at the edge (HackSoft's `InputSerializer` style).

Every body-taking endpoint names an input serializer; `body_parse(Serializer, request)` checks the
body is an object, validates it (types, lengths, nesting; a 400 naming each bad field through the one
error handler in common/errors.py) and returns the validated data for the one service the view calls.
Services keep the checks that need the database (a taken username, a question of another campaign).
drf-spectacular documents each serializer as the endpoint's request body.

The fields here are strict where DRF's are lenient on purpose: a JSON `true` is a boolean, the string
"yes" is not (consent must be given, not coerced), and an integer is a JSON integer, not "3".
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.request import Request

from .errors import ApplicationError


class StrictBooleanField(serializers.BooleanField):
    """true or false, nothing coerced."""

    def to_internal_value(self, data: Any) -> bool:
        if data is True or data is False:
            return data
        self.fail("invalid", input="")
        raise AssertionError  # fail() raises


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer (not a bool, not a numeric string)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictNumberField(serializers.FloatField):
    """A JSON number (not a bool, not a numeric string)."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


def body_parse(serializer_class: type[serializers.Serializer], request: Request, *,
               strict: bool = False) -> dict[str, Any]:
    """The request body validated by `serializer_class`; with `strict`, unknown keys are refused too.
    Only the keys the client sent (and the serializer declares) are returned: an optional field
    left out stays out, so PATCH-style services can tell "not given" from "null"."""
    data = request.data
    if not isinstance(data, Mapping):
        raise ApplicationError("The body must be a JSON object.", errors={"body": ["must be an object"]})
    serializer = serializer_class(data=data)
    if strict:
        unknown = [str(k) for k in data if k not in serializer.fields]
        if unknown:
            raise ApplicationError(f"Unknown field {unknown[0][:200]!r}.",
                                   errors={k[:200]: ["unknown field"] for k in unknown[:50]})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
