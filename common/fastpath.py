"""One switch for every PostgreSQL-only fast path.

Some hot paths have a hand-written PostgreSQL version (prepared SQL, COPY, string_agg transfers) and a
portable twin written with the ORM, which is the reference and the one SQLite (the demo) runs. Every
such branch asks :func:`enabled` here instead of testing ``connection.vendor`` itself, so that

- a deployment can turn a single fast path off (``FASTPATH_<NAME>=false``) without a code change, and
- the contract tests (``tests/contracts/``) can run each portable twin on PostgreSQL and require
  identical results (:func:`forced`).

The paths (settings ``FASTPATHS``, each on by default):

==================  ==========================================================================
``hit_engine``      next / submit as prepared SQL (``annotation/engine_pg.py``)
``token_auth``      token + user + annotator profile in one prepared statement
``report_extract``  questions and answers as tab-separated text from ``string_agg`` (``metrics/extract/pg.py``)
``answers_csv``     the answers with answers.csv's columns read the same way (``metrics/extract/pg.py``)
``mturk_import``    batch-results import with ``COPY`` and sequence-reserved ids (``crowd/mturk_batch.py``)
``image_import``    image planning and manifest import as one INSERT ... SELECT / UPDATE (``generation/bulk.py``)
==================  ==========================================================================
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connection

PATHS = ("hit_engine", "token_auth", "report_extract", "answers_csv", "mturk_import", "image_import")

_forced: dict[str, bool] = {}


def enabled(path: str) -> bool:
    """Whether the PostgreSQL fast path `path` runs here: the database is PostgreSQL and the path is
    not switched off in ``settings.FASTPATHS`` (nor by :func:`forced`)."""
    if path not in PATHS:
        raise KeyError(f"unknown fast path {path!r}; known: {', '.join(PATHS)}")
    if connection.vendor != "postgresql":
        return False
    if path in _forced:
        return _forced[path]
    return bool(getattr(settings, "FASTPATHS", {}).get(path, True))


@contextmanager
def forced(path: str, on: bool) -> Iterator[None]:
    """Run the block with fast path `path` on or off (tests: the portable twin on PostgreSQL).
    Turning a path on still needs PostgreSQL."""
    if path not in PATHS:
        raise KeyError(f"unknown fast path {path!r}; known: {', '.join(PATHS)}")
    had, old = path in _forced, _forced.get(path)
    _forced[path] = on
    try:
        yield
    finally:
        if had:
            _forced[path] = old  # type: ignore[assignment]
        else:
            _forced.pop(path, None)
