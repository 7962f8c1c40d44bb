"""One place that decides what outside text and structured bodies may look like.

Every request body, query string and uploaded spec passes through here, through the parser classes
(`common.parsers`), the request middleware (`common.middleware.InputSanityMiddleware`) or the spec
loader (`campaigns.spec.spec_load_text`):

- **text** may not contain NUL bytes or lone surrogates (PostgreSQL refuses the first, UTF-8 cannot
  encode the second, and either used to surface as a 500 far from where it came in);
- **structure** (JSON / YAML) is bounded in nesting depth (`REQUEST_MAX_DEPTH`, default 64) and,
  for YAML, in node count (`YAML_MAX_NODES`) and size (`YAML_MAX_BYTES`); YAML aliases and anchors'
  back-references are refused outright (an alias bomb is a few hundred bytes that expand to
  gigabytes once anything walks or prints the value), and only JSON's types come out of it
  (timestamps stay strings; binary, sets and custom tags are refused);
- **numbers** must be finite (NaN and infinities cannot be stored in PostgreSQL's jsonb).

Problems are `BodyError`s (400) naming the dotted path of the value at fault. `brief()` is the one
way an error message shows a piece of outside input: a bounded repr, never the whole value.
"""
from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings

from .errors import ApplicationError

DEFAULT_MAX_DEPTH = 64
DEFAULT_YAML_MAX_NODES = 200_000
DEFAULT_YAML_MAX_BYTES = 1024 * 1024
ECHO_LIMIT = 200

_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxstring = ECHO_LIMIT
_repr.maxother = ECHO_LIMIT
_repr.maxlong = 60
for _name in ("maxlist", "maxtuple", "maxdict", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
    setattr(_repr, _name, 8)


class BodyError(ApplicationError):
    """A request body, query string or uploaded file that cannot be accepted (400)."""


class BodySyntaxError(BodyError):
    """The text is not the format it claims to be (not JSON, not YAML, not UTF-8)."""


def brief(value: Any, limit: int = ECHO_LIMIT) -> str:
    """A repr of `value` for an error message: bounded work (reprlib cuts long strings, deep or long
    containers) and at most `limit` characters."""
    try:
        text = _repr.repr(value)
    except Exception:  # a hostile __repr__ must not turn a 400 into a 500
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "\u2026"


def yaml_error_text(exc: Exception) -> str:
    """A YAML error in one readable line: what was wrong and where ("did not find expected ',' or ']'
    at line 2, column 1, while parsing a flow sequence"), bounded; never the repr with literal \\n."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    context = getattr(exc, "context", None)
    if problem is None:
        text = " ".join(str(exc).split())
    else:
        text = str(problem)
        if mark is not None:
            text += f" at line {mark.line + 1}, column {mark.column + 1}"
        if context:
            text += f", {context}"
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:299] + "\u2026"


def max_depth() -> int:
    return int(getattr(settings, "REQUEST_MAX_DEPTH", DEFAULT_MAX_DEPTH))


def text_problem(text: str) -> str | None:
    """Why `text` cannot be accepted (a NUL byte, a lone surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL byte (\\u0000), which text cannot hold"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"contains a lone surrogate (\\u{ord(text[exc.start]):04x}), which is not valid Unicode"
    return None


def _join(path: tuple[Any, ...]) -> str:
    parts = [str(p) if len(str(p)) <= 60 else str(p)[:59] + "\u2026" for p in path]
    joined = ".".join(parts)
    return joined if len(joined) <= ECHO_LIMIT else joined[: ECHO_LIMIT - 1] + "\u2026"


def _safe_key(key: Any) -> Any:
    """A key as it may appear in an error path (a key with a NUL or surrogate is shown escaped)."""
    if isinstance(key, str) and text_problem(key):
        return key.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace").replace("\x00", "\\0")
    return key


def check_tree(data: Any, *, depth_limit: int | None = None, prefix: tuple[Any, ...] = (),
               json_types: bool = True) -> None:
    """Walk a parsed body without recursion and raise BodyError for the first value that breaks a
    rule: nesting deeper than `depth_limit`, text with NUL or lone surrogates (values and keys),
    non-finite numbers, and (with `json_types`) anything but JSON's types or a non-text key. The path
    of a value is spelt out only for an error (every request body with JSON goes through here)."""
    limit = depth_limit or max_depth()
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(data, prefix, 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                where = _join(path) or "body"
                raise BodyError(f"Invalid text at {where}: {problem}.", errors={where: [problem]})
        elif isinstance(value, bool) or value is None or isinstance(value, int):
            continue
        elif isinstance(value, float):
            if not math.isfinite(value):
                where = _join(path) or "body"
                raise BodyError(f"Invalid number at {where}: NaN and infinities are not accepted.",
                                errors={where: ["must be a finite number"]})
        elif isinstance(value, Mapping):
            if depth >= limit:
                where = _join(path) or "body"
                raise BodyError(f"The body is nested more than {limit} levels deep.",
                                errors={where: [f"nested more than {limit} levels deep"]})
            for key, item in value.items():
                if isinstance(key, str):
                    problem = text_problem(key)
                    if problem:
                        shown = _join((*path, _safe_key(key)))
                        raise BodyError(f"Invalid key at {shown}: {problem}.", errors={shown: [problem]})
                elif json_types:
                    shown = _join((*path, brief(key, 40)))
                    raise BodyError(f"Invalid key at {shown}: keys must be text.", errors={shown: ["keys must be text"]})
                stack.append((item, (*path, key), depth + 1))
        elif isinstance(value, (list, tuple)):
            if depth >= limit:
                where = _join(path) or "body"
                raise BodyError(f"The body is nested more than {limit} levels deep.",
                                errors={where: [f"nested more than {limit} levels deep"]})
            stack.extend((item, (*path, i), depth + 1) for i, item in enumerate(value))
        elif json_types:
            where = _join(path) or "body"
            raise BodyError(f"Invalid value at {where}: {type(value).__name__} is not a JSON value.",
                            errors={where: [f"{type(value).__name__} is not accepted (JSON values only)"]})


def check_pairs(pairs: Iterable[tuple[str, Any]], *, prefix: str = "") -> None:
    """Form fields and query parameters: every name and text value must be clean text."""
    for name, value in pairs:
        shown = f"{prefix}{_safe_key(name) if isinstance(name, str) else name}"
        shown = shown if len(shown) <= ECHO_LIMIT else shown[: ECHO_LIMIT - 1] + "\u2026"
        values = value if isinstance(value, (list, tuple)) else [value]
        for text in (name, *values):
            if isinstance(text, str):
                problem = text_problem(text)
                if problem:
                    raise BodyError(f"Invalid text in {shown}: {problem}.", errors={shown: [problem]})


# -- JSON ----------------------------------------------------------------------------------------
def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_loads(text: str | bytes, *, max_bytes: int | None = None, field: str = "body") -> Any:
    """JSON with the rules above (depth, text, finite numbers) and, with `max_bytes`, a size bound;
    raises BodyError naming `field`. The one JSON parser for anything that comes from outside (a
    source check, tests/security/test_parser_guards.py, fails on any other json.load(s))."""
    if max_bytes is not None and len(text) > max_bytes:
        raise BodyError(f"{field}: the JSON is larger than {max_bytes} bytes.", errors={field: ["too large"]},
                        status_code=413 if field == "body" else 400)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = "The body is" if field == "body" else f"{field} is"
            raise BodySyntaxError(f"{where} not UTF-8 (byte {exc.start}).", errors={field: ["not UTF-8"]}) from None
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        limit = max_depth()
        where = "The body is" if field == "body" else f"{field} is"
        raise BodyError(f"{where} nested more than {limit} levels deep.",
                        errors={field: [f"nested more than {limit} levels deep"]}) from None
    except ValueError as exc:
        message = "JSON parse error" if field == "body" else f"{field}: not valid JSON"
        raise BodySyntaxError(f"{message}: {brief(str(exc))[1:-1]}",
                              errors={field: ["not valid JSON"]}) from None
    check_tree(data, prefix=() if field == "body" else (field,))
    return data


def json_lines(lines: Iterable[str | bytes], *, field: str = "rows", max_line_bytes: int = 1024 * 1024,
               start: int = 1) -> Iterable[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSON Lines text, each line through
    `json_loads` (bounded depth, size, clean text); a bad line is a BodyError naming `field.<line>`."""
    for number, raw in enumerate(lines, start=start):
        if not raw.strip():
            continue
        yield number, json_loads(raw, max_bytes=max_line_bytes, field=f"{field}.{number}")


# -- YAML ----------------------------------------------------------------------------------------
def _yaml_module() -> Any:
    import yaml

    return yaml


def _loader() -> Any:
    """A C-speed safe loader that yields JSON's types only: timestamps stay the text they were
    written as; binary, sets, ordered maps and any other explicit tag are refused."""
    global _LOADER
    if _LOADER is None:
        yaml = _yaml_module()
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class JsonishLoader(base):  # type: ignore[misc,valid-type]
            pass

        JsonishLoader.yaml_constructors = dict(base.yaml_constructors)

        def as_text(loader: Any, node: Any) -> str:
            return loader.construct_scalar(node)

        def refuse(loader: Any, node: Any) -> Any:
            raise yaml.constructor.ConstructorError(None, None, f"the tag {clip_tag(node.tag)} is not accepted",
                                                    node.start_mark)

        JsonishLoader.add_constructor("tag:yaml.org,2002:timestamp", as_text)
        for tag in ("binary", "set", "omap", "pairs"):
            JsonishLoader.add_constructor(f"tag:yaml.org,2002:{tag}", refuse)
        JsonishLoader.add_constructor(None, refuse)  # unknown tags
        _LOADER = JsonishLoader
    return _LOADER


_LOADER: Any = None


def clip_tag(tag: Any) -> str:
    return brief(str(tag), 60)


def yaml_loads(text: str | bytes, *, max_bytes: int | None = None, max_nodes: int | None = None) -> Any:
    """YAML with the rules above. The event stream is checked first (aliases, node count, depth),
    so nothing is built from a document that breaks them. Raises BodyError."""
    yaml = _yaml_module()
    max_bytes = max_bytes or int(getattr(settings, "YAML_MAX_BYTES", DEFAULT_YAML_MAX_BYTES))
    max_nodes = max_nodes or int(getattr(settings, "YAML_MAX_NODES", DEFAULT_YAML_MAX_NODES))
    limit = max_depth()
    if isinstance(text, bytes):
        if len(text) > max_bytes:
            raise BodyError(f"The YAML document is larger than {max_bytes} bytes.", errors={"body": ["too large"]})
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise BodyError(f"The body is not UTF-8 (byte {exc.start}).", errors={"body": ["not UTF-8"]}) from None
    elif len(text) > max_bytes:
        raise BodyError(f"The YAML document is larger than {max_bytes} bytes.", errors={"body": ["too large"]})
    problem = text_problem(text)
    if problem:
        raise BodyError(f"Invalid YAML text: {problem}.", errors={"body": [problem]})
    loader = _loader()
    nodes = depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                raise BodyError("YAML aliases (*name) are not accepted: write the value out in full.",
                                errors={"body": ["YAML aliases are not accepted"]})
            if isinstance(event, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                nodes += 1
                if nodes > max_nodes:
                    raise BodyError(f"The YAML document has more than {max_nodes} nodes.",
                                    errors={"body": [f"more than {max_nodes} nodes"]})
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > limit:
                    raise BodyError(f"The body is nested more than {limit} levels deep.",
                                    errors={"body": [f"nested more than {limit} levels deep"]})
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise BodySyntaxError(f"YAML parse error: {yaml_error_text(exc)}", errors={"body": ["not valid YAML"]}) from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of more than 4300 digits
        raise BodyError(f"YAML value error: {brief(str(exc))[1:-1]}", errors={"body": ["not valid YAML"]}) from None
    check_tree(data)
    return data
