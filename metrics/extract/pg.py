"""The fast readers (PostgreSQL): each table comes back as ONE tab-separated text built by PostgreSQL
(`string_agg(concat_ws(...))`) and parsed by pandas' C parser straight into integer codes and
categories.

One round trip and one value instead of a million rows: psycopg's per-row fetch or COPY read costs
microseconds per row in Python; this costs one parse. Text values go as stored (cleaning each one
cost ~40% of the query on 1M rows). A tab or line break inside a value shifts the columns or adds
rows; the parse shows it (a tab makes a row too long, a line break adds a row: the row count comes
with the text) and the rows are then fetched again with every text value escaped (backslash, tab,
CR, LF as two-character escapes) and unescaped after the parse, so the values come back exactly as
stored, equal to what the portable readers (`orm.py`) return. Asked through `common.fastpath`:
`report_extract` (questions, and answers for the report) and `answers_csv` (answers with the
answers.csv columns).
"""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import Any

import numpy as np
from django.db import connection

from annotation.models import Answer, Question
from generation.models import Image

from .data import AnswerColumns, QuestionColumns

_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def _text(expr: str, *, escape: bool) -> str:
    """A text column for the tab-separated transfer: as stored, or escaped (reversibly)."""
    value = f"coalesce({expr}, '')"
    if escape:
        value = (f"replace(replace(replace(replace({value}, '\\', '\\\\'), E'\\t', '\\t'), E'\\n', '\\n'), "
                 "E'\\r', '\\r')")
    return value


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: _UNESCAPE[m.group(1)], value)


class _Shifted(Exception):
    """A value held a tab or a line break: the fast transfer's columns or rows shifted."""


def _fetch_frame(select: Callable[[bool], list[str]], from_where: str, params: list[Any], columns: list[str],
                 dtypes: dict[str, Any]) -> Any:
    """Rows as a pandas frame: text columns (dtype "category") as stored, others as typed."""
    import pandas as pd

    def fetch(escape: bool) -> Any:
        row = "concat_ws(E'\\t', " + ", ".join(select(escape)) + ")"
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*), string_agg({row}, E'\\n') {from_where}", params)
            count, text = cursor.fetchone()
        if not text:
            return pd.DataFrame({c: pd.Series(dtype=dtypes.get(c, object)) for c in columns})
        try:
            # As UTF-8 bytes: io.StringIO would hold the text as 4-byte characters (200 MB for 1M answer rows).
            frame = pd.read_csv(io.BytesIO(text.encode("utf-8")), sep="\t", encoding="utf-8", header=None, names=columns, dtype=dtypes, engine="c",
                                keep_default_na=False, na_values=[], quoting=csv.QUOTE_NONE,
                                skip_blank_lines=False)  # a trailing line break in a value makes a blank row
        except (ValueError, pd.errors.ParserError) as exc:  # too many fields, or text where a number belongs
            raise _Shifted from exc
        # Every row one field too long makes pandas take the first field as the index instead of failing.
        if len(frame) != count or not isinstance(frame.index, pd.RangeIndex):
            raise _Shifted
        if escape:  # categories are the few distinct values: unescape those (kept sorted), not every row
            for name, dtype in dtypes.items():
                if dtype == "category":
                    plain = [_unescape(str(c)) for c in frame[name].cat.categories]
                    frame[name] = frame[name].cat.rename_categories(plain).cat.reorder_categories(sorted(plain))
        return frame

    try:
        return fetch(escape=False)
    except _Shifted:
        return fetch(escape=True)


def _strings(column: Any, order: np.ndarray | None = None) -> np.ndarray:
    """A parsed text column as a numpy string array (rows taken in ``order`` when given). Read as
    categories (a handful of distinct names over 1M rows), it is built from the categories by their
    codes, not converted value by value; the codes are reordered, not the (wide) strings."""
    if hasattr(column, "cat"):
        if column.size == 0:
            return np.zeros(0, dtype=str)
        codes = column.cat.codes.to_numpy()
        return np.asarray(column.cat.categories, dtype=str)[codes if order is None else codes[order]]
    values = column.to_numpy(str)
    return values if order is None else values[order]


def _sorted_by(ids: np.ndarray) -> np.ndarray | None:
    """The order that sorts `ids` (None when they are sorted already: a heap read usually is)."""
    if ids.size < 2 or bool(np.all(ids[1:] > ids[:-1])):
        return None
    return np.argsort(ids, kind="stable")


def questions_read(campaign_id: int, keys: tuple[str, ...], *, slot: bool) -> QuestionColumns:
    q, i = Question._meta.db_table, Image._meta.db_table

    def select(escape: bool) -> list[str]:
        return ["q.id", "q.image_id", "q.is_gold::int", "i.excluded::int", _text("q.setting", escape=escape),
                *(_text(f"q.metadata->>'{k}'", escape=escape) for k in keys),
                *([_text("q.slot", escape=escape)] if slot else [])]

    texts = ["setting", *keys, *(["slot"] if slot else [])]
    frame = _fetch_frame(select, f'FROM "{q}" q JOIN "{i}" i ON i.id = q.image_id WHERE q.campaign_id = %s',
                         [campaign_id], ["id", "image", "gold", "excluded", *texts],
                         {"id": np.int64, "image": np.int64, "gold": np.int8, "excluded": np.int8,
                          **{c: "category" for c in texts}})
    ids = frame["id"].to_numpy(np.int64)
    order = _sorted_by(ids)

    def column(values: np.ndarray) -> np.ndarray:
        return values if order is None else values[order]

    return QuestionColumns(
        id=column(ids), image=column(frame["image"].to_numpy(np.int64)),
        setting=_strings(frame["setting"], order), is_gold=column(frame["gold"].to_numpy(bool)),
        excluded=column(frame["excluded"].to_numpy(bool)), meta={k: _strings(frame[k], order) for k in keys},
        slot=_strings(frame["slot"], order) if slot else None)


def answers_read(campaign_id: int, *, table: bool) -> AnswerColumns:
    """Every stored answer of the campaign. One index scan, no joins (filters are applied in numpy)."""
    def select(escape: bool) -> list[str]:
        extra = ["coalesce(time_ms, -1)", "(extract(epoch FROM created_at) * 1000000)::bigint"] if table else []
        return ["id", "question_id", "annotator_id", "coalesce(corrects_id, -1)", *extra,
                _text("choice", escape=escape)]

    columns = ["id", "q", "a", "x", *(["t", "c_us"] if table else []), "c"]
    frame = _fetch_frame(select, f'FROM "{Answer._meta.db_table}" WHERE campaign_id = %s', [campaign_id], columns,
                         {**{c: np.int64 for c in columns[:-1]}, "c": "category"})
    ids = frame["id"].to_numpy(np.int64)
    order = _sorted_by(ids)

    def column(name: str) -> np.ndarray:
        values = frame[name].cat.codes.to_numpy(np.int64) if name == "c" else frame[name].to_numpy(np.int64)
        return values if order is None else values[order]

    return AnswerColumns(id=column("id"), question=column("q"), annotator=column("a"), code=column("c"),
                         corrects=column("x"), choices=[str(c) for c in frame["c"].cat.categories],
                         time_ms=column("t") if table else None, created_us=column("c_us") if table else None)
