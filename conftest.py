"""Project-wide pytest hooks.

In CI (CI=true) a skipped test is a failure: a missing service, browser or package must never let
the suite pass silently.
"""
import os

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI", "").lower() in ("1", "true", "yes") and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"Skipped tests fail in CI (CI=true): {reason}"
