"""A section that cannot be computed from the answers so far leaves the rest of the report standing."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from metrics.core.report_warnings import warn

_log = logging.getLogger("metrics.sections.report")


def guarded(path: str, build: Callable[[], Any]) -> Any:
    """`build()`, or None with a warning at `path` when it fails: a section that cannot be computed
    from the answers so far (a campaign in progress) leaves the rest of the report standing. The
    sections handle the states they know (tests/metrics/test_report_properties.py asserts no report
    of a random partial campaign needs this net); the error is logged."""
    try:
        return build()
    except (ValueError, ArithmeticError, IndexError, KeyError, TypeError) as exc:
        _log.exception("report section %s not computed", path)
        warn(path, f"not computed from the answers so far ({type(exc).__name__}: {exc})")
        return None
