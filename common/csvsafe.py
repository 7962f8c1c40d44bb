"""The one way the product writes CSV: cells safe to open in a spreadsheet.

OWASP's CSV injection rule: a text cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage
return could be read as a formula by Excel, LibreOffice or Google Sheets (`=HYPERLINK(...)`,
`@SUM(...)`, `-2+3`); such a cell gets a leading single quote, which spreadsheets show as text and
drop from the value. Only text is touched: numbers stay numbers (a negative STS of -11.11 written
from a float is still -11.11), and the JSON exports stay exact (they are never passed through here).
Besides that prefix rule every text cell is quoted (`csv.QUOTE_NONNUMERIC`; answers.csv's fast path
quotes its text fields itself): a cell such as `a;=1+1;b` is one quoted text in a spreadsheet that
splits on semicolons, never a formula after a separator. A reader that wants the stored text back removes one leading `'` from a text cell that starts with
`'` followed by one of those characters (`csv_cell_restore`).

Every CSV the product writes goes through `csv_writer`, `csv_dict_writer`, `csv_cell` (for
hand-formatted fast paths such as answers.csv) or `csv_frame` (pandas); a layout test fails on a
`csv.writer`, `csv.DictWriter` or `.to_csv(` anywhere else.
"""
from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """The value as it may go into a CSV cell: text starting with a trigger gets a leading `'`."""
    if isinstance(value, str) and value.startswith(TRIGGERS):
        return "'" + value
    return value


def csv_cell_restore(value: str) -> str:
    """The stored text of a cell written by `csv_cell` (for readers that need it exactly)."""
    if value.startswith("'") and value[1:].startswith(TRIGGERS):
        return value[1:]
    return value


QUOTING = csv.QUOTE_NONNUMERIC


class _SafeWriter:
    def __init__(self, out: TextIO, **kwargs: Any):
        kwargs.setdefault("quoting", QUOTING)
        self._writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow([csv_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class _SafeDictWriter:
    def __init__(self, out: TextIO, fieldnames: Iterable[str], **kwargs: Any):
        kwargs.setdefault("quoting", QUOTING)
        self._writer = csv.DictWriter(out, fieldnames=list(fieldnames), **kwargs)

    def writeheader(self) -> Any:
        return self._writer.writeheader()

    def writerow(self, row: Mapping[str, Any]) -> Any:
        return self._writer.writerow({k: csv_cell(v) for k, v in row.items()})

    def writerows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(out: TextIO, **kwargs: Any) -> _SafeWriter:
    """`csv.writer` whose rows are neutralised cell by cell."""
    return _SafeWriter(out, **kwargs)


def csv_dict_writer(out: TextIO, fieldnames: Iterable[str], **kwargs: Any) -> _SafeDictWriter:
    """`csv.DictWriter` whose rows are neutralised cell by cell."""
    return _SafeDictWriter(out, fieldnames, **kwargs)


def csv_frame(frame: Any, **kwargs: Any) -> str:
    """A pandas DataFrame as CSV text, its text cells neutralised (numeric columns untouched)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    safe = frame.copy()
    for column in safe.columns:
        if not is_numeric_dtype(safe[column]) and not is_bool_dtype(safe[column]):  # object or str dtype
            safe[column] = safe[column].map(csv_cell)
    kwargs.setdefault("quoting", QUOTING)
    return safe.to_csv(**kwargs)
