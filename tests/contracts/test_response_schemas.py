"""Responses are declared at the edge (issue 21, typed contracts): every operation's 2xx JSON response
documents its fields in the OpenAPI schema (an output serializer, no bare `dict`), as the request-body
test does for bodies. Only binary downloads (zip, csv, html, yaml) are allowed to be shapeless."""
from __future__ import annotations

from typing import Any

import pytest

from tests.builders.schema import documented, openapi_schema

# Binary or text downloads: a body with no JSON fields to document.
BINARY_MEDIA = {"application/zip", "text/csv", "text/html", "application/yaml"}
# The OpenAPI document itself (drf-spectacular's view): it is the schema, not described by it.
SELF_DESCRIBING = {("get", "/api/schema/")}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return openapi_schema()


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in schema["paths"].items() for method, op in ops.items()
            if method in ("get", "post", "put", "patch", "delete")]


def test_every_json_response_documents_its_fields(schema: dict[str, Any]) -> None:
    undocumented, n_documented, binary = [], 0, 0
    for path, method, op in _operations(schema):
        if (method, path) in SELF_DESCRIBING:
            continue
        for code, response in op.get("responses", {}).items():
            if not str(code).startswith("2") or not response.get("content"):
                continue
            for media, body in response["content"].items():
                if media.split(";")[0] in BINARY_MEDIA:
                    binary += 1
                    continue
                if documented(schema, body.get("schema", {})):
                    n_documented += 1
                else:
                    undocumented.append(f"{method.upper()} {path} {code} {media}")
    assert not undocumented, "\n".join(undocumented)
    assert n_documented >= 60 and binary >= 3


def test_a_bare_dict_would_fail() -> None:
    """The check is not vacuous: the schema drf-spectacular writes for `responses={200: dict}`."""
    assert not documented({"components": {"schemas": {}}}, {"type": "object", "additionalProperties": {}})
    assert documented({"components": {"schemas": {"X": {"properties": {"id": {}}}}}},
                       {"type": "array", "items": {"$ref": "#/components/schemas/X"}})
