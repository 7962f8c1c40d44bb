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
