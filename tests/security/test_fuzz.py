"""Fuzz every API operation from the OpenAPI schema (schemathesis) against the app served on
127.0.0.1 (pytest-django's live_server), with a researcher's and an annotator's token and the
fixture world: zero 5xx responses (schemathesis' `not_a_server_error` check). Bounded: a few
examples per operation and role, a wall-clock budget (FUZZ_BUDGET_S, default 120 s)."""
from __future__ import annotations

import os
import time
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error

from .conftest import World

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
BUDGET_S = float(os.environ.get("FUZZ_BUDGET_S", "120"))


def test_api_fuzz_has_no_server_errors(live_server: Any, world: World) -> None:
    base = live_server.url
    raw = requests.get(f"{base}/api/schema/?format=json", timeout=30)
    assert raw.status_code == 200
    schema = schemathesis.openapi.from_dict(raw.json())
    tokens = {role: Token.objects.get_or_create(user=user)[0].key
              for role, user in (("researcher", world.x), ("annotator", world.a.user))}
    failures: list[str] = []
    calls = 0
    started = time.monotonic()
    session = requests.Session()
    real = {"campaign_id": world.campaign.pk, "assignment_id": world.assignment.pk, "image_id": world.image.pk,
            "qualification_id": world.qualification.pk, "annotator_id": world.a.pk}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    current: dict[str, Any] = {}  # the role under test (read by run(), set before each call)
    for operation in operations:
        for role, token in tokens.items():
            if time.monotonic() - started > BUDGET_S:
                break
            current.update(role=role, headers={"Authorization": f"Token {token}"})

            @given(case=operation.as_strategy())
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
                response = case.call(base_url=base, headers=current["headers"], session=session, timeout=30)
                try:
                    case.validate_response(response, checks=[not_a_server_error])
                except Exception:  # collect every failure, report them all
                    failures.append(f"{current['role']}: {case.method} {case.formatted_path} query={case.query} "
                                    f"body={str(case.body)[:200]} -> {response.status_code} {response.text[:300]}")

            run()
    elapsed = time.monotonic() - started
    print(f"fuzz: {len(operations)} operations, {calls} calls, {elapsed:.0f} s")
    assert calls >= len(operations), "the budget ran out before every operation was tried"
    assert not failures, f"{len(failures)} server errors:\n" + "\n".join(failures[:40])
