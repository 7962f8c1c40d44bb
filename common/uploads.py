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

import codecs
import csv
import io
from collections.abc import Iterator
from typing import Any, BinaryIO

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


READ_CHUNK = 1 << 20  # bytes per read of a streamed upload (the UTF-8 check; the CSV reader reads 8 KB)


def csv_lines(data: bytes | BinaryIO) -> io.TextIOWrapper:
    """The decoded lines of a CSV (bytes, or a binary stream read from its start: an upload's file, a
    stored upload), decoded as they are read (a whole-file str would be up to four times the bytes)."""
    stream: Any = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    return io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")


def utf8_problem(stream: BinaryIO) -> tuple[int, int] | None:
    """(line, byte offset) of the first byte that is not UTF-8, read in chunks of READ_CHUNK; None
    when all of it is UTF-8. Leaves the stream at its start."""
    stream.seek(0)
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = lines = 0
    problem = None
    while problem is None:
        chunk = stream.read(READ_CHUNK)
        pending = len(decoder.getstate()[0])  # a character split by the chunk boundary (never a newline)
        try:
            decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            at = max(0, exc.start - pending)
            problem = (lines + chunk[:at].count(b"\n") + 1, offset - pending + exc.start)
        if not chunk:
            break
        offset += len(chunk)
        lines += chunk.count(b"\n")
    stream.seek(0)
    return problem


def upload_rows(name: str, data: bytes | BinaryIO, errors: dict[str, list[str]], *, columns: tuple[str, ...],
                columns_hint: str, empty_field: str, encoding_hint: str = "",
                json_keys_checked: bool = False,
                stop_on_unknown_columns: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) for each row of `data` (bytes or a seekable binary stream, read in chunks: a stored
    upload is never held whole); problems go to `errors` (`rows.<line>`, or `empty_field` for an empty
    CSV). JSON Lines when the name says so (.jsonl / .ndjson / .json) or, for a name that is not .csv,
    when the text starts with "{". CSV cells that are empty are left out of the row.
    `json_keys_checked`: a JSON row with keys outside `columns` is named and skipped (a CSV's unknown
    columns are always named; `stop_on_unknown_columns` reads no row then)."""
    stream: BinaryIO = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    problem = utf8_problem(stream)  # checked first, to name the line before any row is used
    if problem is not None:
        line, at = problem
        errors.setdefault(f"rows.{line}", []).append(f"row {line}: not valid UTF-8 (byte {at}){encoding_hint}")
        return
    text = csv_lines(stream)
    try:
        yield from _rows_of(name, text, errors, columns=columns, columns_hint=columns_hint, empty_field=empty_field,
                            json_keys_checked=json_keys_checked, stop_on_unknown_columns=stop_on_unknown_columns)
    finally:
        text.detach()  # the caller's stream stays open (closing the wrapper would close it)


def _rows_of(name: str, text: io.TextIOWrapper, errors: dict[str, list[str]], *, columns: tuple[str, ...],
             columns_hint: str, empty_field: str, json_keys_checked: bool,
             stop_on_unknown_columns: bool) -> Iterator[tuple[int, dict[str, Any]]]:
    """upload_rows' reading of the decoded text (checked to be UTF-8)."""
    lower = name.lower()
    head = text.read(4096).lstrip()
    text.seek(0)
    if lower.endswith((".jsonl", ".ndjson", ".json")) or (not lower.endswith(".csv") and head.startswith("{")):
        lines = iter(text)
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
    reader = csv.DictReader(text)
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
