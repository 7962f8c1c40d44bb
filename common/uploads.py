"""Row files uploaded by researchers (image manifests, machine labels): CSV with a header row, or
JSON Lines. One reader for both imports, so both name every problem by its line (`rows.<line>`)
the same way; each import then validates its rows' values itself.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from .inputs import brief


def upload_rows(name: str, data: bytes, errors: dict[str, list[str]], *, columns: tuple[str, ...],
                columns_hint: str, empty_field: str, encoding_hint: str = "",
                json_keys_checked: bool = False,
                stop_on_unknown_columns: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) for each row of `data`; problems go to `errors` (`rows.<line>`, or `empty_field`
    for an empty CSV). JSON Lines when the name says so (.jsonl / .ndjson / .json) or, for a name
    that is not .csv, when the text starts with "{". CSV cells that are empty are left out of the row.
    `json_keys_checked`: a JSON row with keys outside `columns` is named and skipped (a CSV's unknown
    columns are always named; `stop_on_unknown_columns` reads no row then)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        errors.setdefault(f"rows.{line}", []).append(f"row {line}: not valid UTF-8 (byte {exc.start}){encoding_hint}")
        return
    lower = name.lower()
    if lower.endswith((".jsonl", ".ndjson", ".json")) or (not lower.endswith(".csv") and text.lstrip().startswith("{")):
        for line, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                errors.setdefault(f"rows.{line}", []).append(f"row {line}: not JSON: {exc.msg}")
                continue
            if not isinstance(row, dict):
                errors.setdefault(f"rows.{line}", []).append(f"row {line}: must be a JSON object")
                continue
            unknown = [k for k in row if k not in columns] if json_keys_checked else []
            if unknown:
                errors.setdefault(f"rows.{line}", []).append(
                    f"row {line}: unknown keys {', '.join(map(brief, unknown))}")
                continue
            yield line, row
        return
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        errors.setdefault(empty_field, []).append(f"the {empty_field} is empty")
        return
    unknown = [f for f in reader.fieldnames if f not in columns]
    if unknown:
        errors.setdefault("rows.1", []).append(f"row 1: unknown columns {', '.join(map(repr, unknown))} "
                                               f"({columns_hint})")
        if stop_on_unknown_columns:
            return
    for row in reader:
        yield reader.line_num, {k: v for k, v in row.items() if k is not None and v not in (None, "")}
