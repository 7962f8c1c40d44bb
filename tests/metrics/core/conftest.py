"""Shared helpers for the pure metric tests (no Django needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "reference"


def load_reference(name: str) -> dict[str, Any]:
    with open(REFERENCE_DIR / name, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="session")
def pst_reference() -> dict[str, Any]:
    return load_reference("pst_table14.json")


@pytest.fixture(scope="session")
def gep_reference() -> dict[str, Any]:
    return load_reference("gep_tables.json")


@pytest.fixture
def no_full_gc(monkeypatch: pytest.MonkeyPatch) -> None:
    """statsmodels' `multipletests` ends with `gc.collect()`: over a whole test session's objects that is
    about 1.2 s a call, and it changes no value; the tests comparing with it skip the collection."""
    import gc

    monkeypatch.setattr(gc, "collect", lambda *args, **kwargs: 0)
