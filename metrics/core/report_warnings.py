"""The report's top-level `warnings`: figures or sections left out or flagged, and why.

A warning is `{"path": <dotted key of the figure or section>, "message": <one sentence>}`, e.g.
`{"path": "pst.gap.micro_ci", "message": "3 single images per identity: per-identity gap interval
not computed"}`. Section builders add one with `warn(path, message)` while the report is built;
`report_from_data` collects them (`collecting()`) into `report["warnings"]` and the HTML shows each
next to the section its path starts with. Outside a `collecting()` block `warn` does nothing, so
the pure functions that call it stay usable alone (a notebook, the validity harness).

Pure: no Django.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = ["WarningLog", "collecting", "section_warnings", "warn"]


@dataclass
class WarningLog:
    """Warnings in the order they were added (one per path and message)."""

    items: list[dict[str, str]] = field(default_factory=list)

    def add(self, path: str, message: str) -> None:
        entry = {"path": str(path), "message": str(message)}
        if entry not in self.items:
            self.items.append(entry)

    def as_list(self) -> list[dict[str, str]]:
        return [dict(w) for w in self.items]


_CURRENT: ContextVar[WarningLog | None] = ContextVar("report_warnings", default=None)


def warn(path: str, message: str) -> None:
    """Record that the figure or section at `path` (dotted report key) is left out or flagged."""
    log = _CURRENT.get()
    if log is not None:
        log.add(path, message)


@contextmanager
def collecting(log: WarningLog | None = None) -> Iterator[WarningLog]:
    """Collect the `warn` calls made inside the block. Without `log`, a block inside another one joins
    the outer log (a report built inside a larger one, e.g. `?source=` adding hybrid sections, keeps
    every warning); with `log`, the block collects into that log alone."""
    outer = _CURRENT.get()
    if log is None and outer is not None:
        yield outer
        return
    log = WarningLog() if log is None else log
    token = _CURRENT.set(log)
    try:
        yield log
    finally:
        _CURRENT.reset(token)


def section_warnings(warnings: list[dict[str, Any]] | None, key: str) -> list[dict[str, Any]]:
    """The warnings whose path is the section `key` or lies under it (`pst`, `pst.gap.micro_ci`)."""
    return [w for w in warnings or [] if w.get("path") == key or str(w.get("path", "")).startswith(key + ".")]
