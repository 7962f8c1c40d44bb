"""Files uploaded from outside: one capped reader for every upload field (`upload_read`: a size
limit per endpoint, read in chunks, a 413 naming the field past it) and one reader for row files
(image manifests, machine labels): CSV with a header row, or JSON Lines. Both imports name every
problem by its line (`rows.<line>`) the same way; each import then validates its rows' values itself.

JSON Lines go through the bounded JSON parser (common.inputs.json_lines: depth, size, NUL, lone
surrogates); a CSV cell over the csv module's field limit (128 KB) or a damaged CSV is a problem of
its line, never a 500. A source check (tests/security/test_parser_guards.py) fails on an API that
reads `request.FILES` any other way.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from .inputs import BodyError, brief, json_lines

DEFAULT_UPLOAD_LIMITS = {
    "csv": 100 * 1024 * 1024,        # MTurk batch results, machine labels, image manifests
    "references": 1024 * 1024,       # a references CSV (a few hundred rows)
    "spec": 1024 * 1024,             # a spec file (YAML_MAX_BYTES)
    "archive": 1024 ** 3,            # a campaign archive or an image zip (compressed)
}


def upload_limit(kind: str) -> int:
    """The size limit of an upload kind: settings.UPLOAD_LIMITS[kind] or the default above."""
    limits = getattr(settings, "UPLOAD_LIMITS", {}) or {}
    return int(limits.get(kind, DEFAULT_UPLOAD_LIMITS[kind]))


def upload_too_large(field: str, limit: int) -> BodyError:
    return BodyError(f"{field}: the file is larger than {limit} bytes.", errors={field: [f"larger than {limit} bytes"]},
                     status_code=413)


def upload_check(upload: Any, *, field: str, kind: str) -> Any:
    """The uploaded file object itself (to stream from), once its size is within the kind's limit."""
    limit = upload_limit(kind)
    if getattr(upload, "size", None) is not None and upload.size > limit:
        raise upload_too_large(field, limit)
    return upload


def upload_read(upload: Any, *, field: str, kind: str) -> bytes:
    """The bytes of an uploaded file, at most the kind's limit (read in chunks; 413 past it)."""
    limit = upload_limit(kind)
    upload_check(upload, field=field, kind=kind)
    chunks: list[bytes] = []
    total = 0
    for chunk in upload.chunks():
        total += len(chunk)
        if total > limit:
            raise upload_too_large(field, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def csv_lines(data: bytes) -> Iterator[str]:
    """The decoded lines of a CSV, decoded as they are read (a whole-file str would be up to four
    times the bytes)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")


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
        data.decode("utf-8-sig")  # checked whole first, to name the line; the copy is dropped at once
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        errors.setdefault(f"rows.{line}", []).append(f"row {line}: not valid UTF-8 (byte {exc.start}){encoding_hint}")
        return
    lower = name.lower()
    head = data[:4096].decode("utf-8-sig", errors="ignore").lstrip()
    if lower.endswith((".jsonl", ".ndjson", ".json")) or (not lower.endswith(".csv") and head.startswith("{")):
        lines = iter(csv_lines(data))
        number = 0
        while True:
            try:
                for line, row in json_lines(lines, field="rows", start=number + 1):
                    number = line
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
            except BodyError as exc:  # one bad line: named, and the reading goes on after it
                where, problems = next(iter(exc.errors.items()))
                parts = where.split(".", 2)
                number = int(parts[1])
                inner = f"{parts[2]}: " if len(parts) > 2 else ""  # the key at fault, e.g. "url: contains a NUL"
                errors.setdefault(f"rows.{number}", []).append(f"row {number}: {inner}not accepted ({problems[0]})"
                                                               if inner else f"row {number}: not JSON ({problems[0]})")
    reader = csv.DictReader(csv_lines(data))
    try:
        fieldnames = reader.fieldnames
    except csv.Error as exc:
        errors.setdefault("rows.1", []).append(f"row 1: not valid CSV ({brief(str(exc))[1:-1]})")
        return
    if not fieldnames:
        errors.setdefault(empty_field, []).append(f"the {empty_field} is empty")
        return
    unknown = [f for f in fieldnames if f not in columns]
    if unknown:
        errors.setdefault("rows.1", []).append(f"row 1: unknown columns {', '.join(map(brief, unknown))} "
                                               f"({columns_hint})")
        if stop_on_unknown_columns:
            return
    try:
        for row in reader:
            yield reader.line_num, {k: v for k, v in row.items() if k is not None and v not in (None, "")}
    except csv.Error as exc:  # a cell over 128 KB, a NUL, a damaged quote: the line, never a 500
        line = reader.line_num + 1  # the record that starts after the last one read
        errors.setdefault(f"rows.{line}", []).append(f"row {line}: not valid CSV ({brief(str(exc))[1:-1]})")
