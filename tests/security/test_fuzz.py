"""Fuzz every API operation from the OpenAPI schema (schemathesis) against the app served on
127.0.0.1 (pytest-django's live_server), with a researcher's and an annotator's token and the
fixture world: zero 5xx responses (schemathesis' `not_a_server_error` check).

Every request media type an operation declares is fuzzed: JSON, YAML (the spec endpoints),
form-urlencoded and multipart (the uploads, and every DRF view's form parsers). Then every operation
that takes a body also gets bodies it does not declare: the same generated data as YAML (415 where
YAML is not read; never a 5xx), as multipart with a file, and a few hostile bodies (a YAML alias
bomb, 5,000-level JSON nesting, NUL bytes and lone surrogates). Bounded: a few examples per
operation, media type and role, and a wall-clock budget (FUZZ_BUDGET_S, default 150 s)."""
from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest
import requests
import schemathesis
import yaml
from django.test.testcases import QuietWSGIRequestHandler
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error

from tests.builders.hostile import OVERFLOWS, deep_jsonl, huge_cell_csv, tainted_png, zip_bomb, zip_of
from tests.builders.security import alias_bomb

from .conftest import World

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))
BUDGET_S = float(os.environ.get("FUZZ_BUDGET_S", "150"))
HOSTILE: list[tuple[str, bytes]] = [
    ("application/yaml", alias_bomb(6).encode()),
    ("application/json", b"[" * 5000 + b"]" * 5000),
    ("application/json", json.dumps({"name": "a\u0000b", "answers": ["\ud800"], "x": {"\udfff": 1}}).encode()),
    ("application/x-www-form-urlencoded", b"username=a%00b&password=x&items=%ED%A0%80"),
]


# Hostile files for every multipart upload field (issue 24): deep JSON Lines, CSV cells over 128 KB,
# zip bombs (as a campaign archive and as an image zip), numeric overflows in CSV rows, a PNG with
# text chunks and trailing bytes.
HOSTILE_FILES: list[tuple[str, bytes]] = [
    ("deep.jsonl", deep_jsonl({"image": 1}, 3000)),
    ("huge.csv", huge_cell_csv(["prompt_key", "sample_index", "url"])),
    ("bomb.zip", zip_bomb(size=48 * 1024 * 1024, manifest=b'{"format": "t2i-campaign-archive", "version": 1}')),
    ("deep-manifest.zip", zip_of({"manifest.json": b"[" * 5000 + b"]" * 5000})),
    ("numbers.csv", ("HITId,WorkerId,AssignmentId,AssignmentStatus,WorkTimeInSeconds,Reward,image,sample_index,"
                     "score,percent_female,name,source,identity\n" + "\n".join(
                         f"H,W,A{i},Submitted,{v},${v},{v},{v},{v},{v},n,s,i" for i, v in enumerate(OVERFLOWS))).encode()),
    ("tainted.png", tainted_png()),
]
FIELD_VALUES = {"labeller": "fuzz-model", "mapping": '{"slots": 1e999999, "image_url": "{k:>99999999}"}',
                "campaigns": "9" * 5000, "dry_run": "true", "answer": "Yes", "caption": "x"}


def _multipart_fields(spec: dict[str, Any], path: str) -> tuple[list[str], list[str]]:
    """(file fields, other fields) of a POST's multipart body, from the OpenAPI document."""
    content = ((spec["paths"].get(path, {}).get("post") or {}).get("requestBody") or {}).get("content") or {}
    schema = (content.get("multipart/form-data") or {}).get("schema") or {}
    if "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    props = schema.get("properties") or {}
    uploads = ("binary", "uri")  # a FileField is `binary` in the request component (`uri` without the split)
    files = [n for n, p in props.items() if p.get("format") in uploads or (p.get("items") or {}).get("format") in uploads]
    return files, [n for n in props if n not in files]


def _media_types(operation: Any) -> list[str | None]:
    types = [body.media_type for body in operation.body] if operation.body else []
    return list(dict.fromkeys(types)) or [None]


class _EmptyBodyAdapter(requests.adapters.HTTPAdapter):
    """An empty str/bytes body (a generated empty form) with `Content-Length: 0`. requests leaves the
    header out for a zero-length body and urllib3 then sends it chunked; Django's test server reads no
    chunked bodies, so the "0" terminator stays on the kept-alive connection, is read as the next
    request line and answered with a bare HTTP/0.9 error page, which the client's next request may
    receive as its response (a race the unread socket usually wins). The server sees the same empty body."""

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        if request.body is not None and len(request.body) == 0 and "Content-Length" not in request.headers:
            request.headers["Content-Length"] = "0"
        return super().send(request, *args, **kwargs)


@pytest.fixture
def no_nagle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The live server's connections with TCP_NODELAY: its handler sends a response's headers and body in
    separate writes, and with Nagle's algorithm the body waits for the client's delayed ACK, about 40 ms a
    request (some 90 s of this test's ~2,000 requests, which then ran close to the budget). Each
    connection reads the class attribute when it is accepted, i.e. during this test."""
    monkeypatch.setattr(QuietWSGIRequestHandler, "disable_nagle_algorithm", True)


@pytest.mark.usefixtures("no_nagle")
def test_api_fuzz_has_no_server_errors(live_server: Any, world: World) -> None:
    base = live_server.url
    raw = requests.get(f"{base}/api/schema/?format=json", timeout=30)
    assert raw.status_code == 200
    schema = schemathesis.openapi.from_dict(raw.json())
    tokens = {role: Token.objects.get_or_create(user=user)[0].key
              for role, user in (("researcher", world.x), ("annotator", world.a.user))}
    failures: list[str] = []
    calls = 0
    seen_types: set[str] = set()
    started = time.monotonic()
    session = requests.Session()
    session.mount("http://", _EmptyBodyAdapter())
    real = {"campaign_id": world.campaign.pk, "assignment_id": world.assignment.pk, "image_id": world.image.pk,
            "qualification_id": world.qualification.pk, "annotator_id": world.a.pk}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    current: dict[str, Any] = {}  # the role under test (read by run(), set before each call)

    def record(response: requests.Response, what: str) -> None:
        if response.status_code >= 500:
            failures.append(f"{current['role']}: {what} -> {response.status_code} {response.text[:300]}")

    for operation in operations:
        for media_type in _media_types(operation):
            for role, token in tokens.items():
                if time.monotonic() - started > BUDGET_S:
                    break
                current.update(role=role, headers={"Authorization": f"Token {token}"})

                @given(case=operation.as_strategy(media_type=media_type) if media_type else operation.as_strategy())
                @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                          phases=[Phase.explicit, Phase.generate],
                          suppress_health_check=list(HealthCheck))
                def run(case: Any) -> None:
                    nonlocal calls
                    calls += 1
                    if calls % 2 == 0 and case.path_parameters:  # half the calls reach real objects
                        for name in list(case.path_parameters):
                            if name in real:
                                case.path_parameters[name] = real[name]
                    if case.media_type:
                        seen_types.add(case.media_type)
                    response = case.call(base_url=base, headers=current["headers"], session=session, timeout=30)
                    try:
                        case.validate_response(response, checks=[not_a_server_error])
                    except Exception:  # collect every failure, report them all
                        failures.append(f"{current['role']}: {case.method} {case.formatted_path} "
                                        f"[{case.media_type}] query={case.query} body={str(case.body)[:200]} "
                                        f"-> {response.status_code} {response.text[:300]}")
                    if case.method.upper() in ("POST", "PUT", "PATCH") and isinstance(case.body, (dict, list)):
                        # The same data in encodings the operation may not take: never a 5xx.
                        url = base + case.formatted_path
                        as_yaml = yaml.safe_dump(case.body, allow_unicode=True)
                        record(session.request(case.method, url, data=as_yaml.encode(), timeout=30,
                                               headers={**current["headers"], "Content-Type": "application/yaml"}),
                               f"{case.method} {case.formatted_path} as YAML")
                        fields = {str(k)[:50]: json.dumps(v) if isinstance(v, (dict, list)) else str(v)
                                  for k, v in (case.body.items() if isinstance(case.body, dict) else [])}
                        record(session.request(case.method, url, data=fields, timeout=30, headers=current["headers"],
                                               files={"file": ("x.bin", b"\x00\xff" * 50)}),
                               f"{case.method} {case.formatted_path} as multipart")

                run()
        if operation.method.upper() in ("POST", "PUT", "PATCH"):
            for role, token in tokens.items():
                current["role"] = role
                path = operation.path
                for name, value in real.items():
                    path = path.replace("{" + name + "}", str(value))
                for content_type, body in HOSTILE:
                    calls += 1
                    response = session.request(operation.method.upper(), base + path, data=body, timeout=30,
                                               headers={"Authorization": f"Token {token}", "Content-Type": content_type})
                    record(response, f"{operation.method.upper()} {path} hostile {content_type}")
                    if response.status_code < 500:
                        assert len(response.content) < 20_000, (path, content_type, len(response.content))
    uploads = 0
    for operation in operations:
        if operation.method.upper() != "POST":
            continue
        file_fields, other_fields = _multipart_fields(raw.json(), operation.path)
        if not file_fields:
            continue
        path = operation.path
        for name, value in real.items():
            path = path.replace("{" + name + "}", str(value))
        current["role"] = "researcher"
        for filename, data in HOSTILE_FILES:
            for field in file_fields:
                fields = {name: FIELD_VALUES.get(name, "x") for name in other_fields}
                if "family" in other_fields:
                    fields["family"] = world.gold.family
                response = session.post(base + path, data=fields, files={field: (filename, data)}, timeout=60,
                                        headers={"Authorization": f"Token {tokens['researcher']}"})
                uploads += 1
                record(response, f"POST {path} file {field}={filename}")
                assert len(response.content) < 20_000, (path, filename, len(response.content))
    assert uploads >= 4 * len(HOSTILE_FILES), uploads  # images, archive, machine labels, MTurk batch, references, examples
    elapsed = time.monotonic() - started
    print(f"fuzz: {len(operations)} operations, {calls} calls, {uploads} hostile uploads, "
          f"media types {sorted(seen_types)}, {elapsed:.0f} s")
    assert calls >= len(operations), "the budget ran out before every operation was tried"
    assert {"application/json", "application/yaml", "multipart/form-data"} <= seen_types, seen_types
    assert not failures, f"{len(failures)} server errors:\n" + "\n".join(failures[:40])
