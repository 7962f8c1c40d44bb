"""Reading the OpenAPI schema in tests: resolve `$ref`s, tell a documented response from a free-form
one, and check a real response body against what its operation documents."""
from __future__ import annotations

import re
from typing import Any

from drf_spectacular.generators import SchemaGenerator


def openapi_schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def documented(schema: dict[str, Any], node: dict[str, Any]) -> bool:
    """An object with named properties (or an array of them, or a union of documented shapes)."""
    node = resolve(schema, node)
    if node.get("type") == "array":
        return documented(schema, node.get("items", {}))
    for key in ("allOf", "oneOf", "anyOf"):
        if key in node:
            return all(documented(schema, part) for part in node[key])
    return bool(node.get("properties"))


def operation(schema: dict[str, Any], method: str, url: str) -> dict[str, Any]:
    """The operation a concrete URL (e.g. /api/campaigns/3/open/) falls under."""
    path = url.split("?", 1)[0]
    for template, ops in schema["paths"].items():
        if re.fullmatch(re.sub(r"\{[^}]+\}", r"[^/]+", template), path) and method in ops:
            return ops[method]
    raise AssertionError(f"no operation {method.upper()} {path} in the schema")


def key_problems(schema: dict[str, Any], node: dict[str, Any], body: Any, where: str = "") -> list[str]:
    """How `body` strays from the documented shape: a documented required key missing, or a key the
    schema does not name (top level, objects of arrays, and nested documented objects)."""
    node = resolve(schema, node)
    if "oneOf" in node or "anyOf" in node:
        parts = node["oneOf"] if "oneOf" in node else node["anyOf"]
        options = [key_problems(schema, part, body, where) for part in parts]
        return [] if any(not p for p in options) else min(options, key=len)
    if node.get("type") == "array" and isinstance(body, list):
        return key_problems(schema, node.get("items", {}), body[0], f"{where}[0]") if body else []
    props = node.get("properties")
    if not props or not isinstance(body, dict):
        return []
    problems = [f"{where}.{k}: documented as required, not returned" for k in node.get("required", []) if k not in body]
    problems += [f"{where}.{k}: returned, not documented" for k in body if k not in props]
    for key, sub in props.items():
        if key in body and body[key] is not None:
            problems += key_problems(schema, sub, body[key], f"{where}.{key}")
    return problems


def response_problems(schema: dict[str, Any], method: str, url: str, status: int, body: Any) -> list[str]:
    op = operation(schema, method, url)
    response = op["responses"].get(str(status))
    if response is None:
        return [f"{method.upper()} {url}: {status} is not documented"]
    media = response.get("content", {}).get("application/json")
    if media is None:
        return [f"{method.upper()} {url}: {status} has no JSON body documented"]
    return [f"{method.upper()} {url} {status}: {p}" for p in key_problems(schema, media["schema"], body)]
