"""Exact query counts of the report's build path, for both twins of the extraction, at two sizes (the
counts do not depend on the number of answers). Every statement on every connection is counted: the
fast path reads the answers on a second connection in the questions' exported snapshot."""
from __future__ import annotations

import functools
import io
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from common import fastpath
from metrics.extract import campaign_data
from metrics.options import ReportOptions
from metrics.package.exports import report_csv_get, report_csv_zip
from metrics.snapshots.report import report_build, report_get
from tests.builders.metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def statements() -> Iterator[list[tuple[str, str]]]:
    """(thread, sql) of every statement run through Django on any connection, any thread."""
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()
    original = CursorWrapper.execute

    def execute(self: Any, sql: str, params: Any = None) -> Any:
        with lock:
            seen.append((threading.current_thread().name, sql))
        return original(self, sql, params)

    CursorWrapper.execute = execute  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        CursorWrapper.execute = original  # type: ignore[method-assign]


def _campaign(owner: User, raters: int) -> Any:
    campaign, questions = campaign_with_questions(owner, {**SMALL_GEP, "name": f"queries-{raters}"})
    answer_all(campaign, questions, gep_label, annotators(raters, f"qr{raters}-"))
    return campaign


# (main connection, second connection) per path. Fast, outside a transaction: SET TRANSACTION
# ISOLATION + pg_export_snapshot, questions, blocked annotators, image counts, the annotators'
# demographics (the `annotators` section, metrics/extract/demographics.py); and on the second
# connection SET TRANSACTION ISOLATION + SET TRANSACTION SNAPSHOT, answers. Inside a transaction, and
# the portable twin: questions, answers, blocked annotators, image counts, demographics.
EXTRACT = {"fast": (6, 3), "fast_in_transaction": (5, 0), "portable": (5, 0)}


@pytest.mark.parametrize("path", list(EXTRACT))
def test_extract_and_build_run_an_exact_number_of_queries(researcher: User, path: str) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("both twins are counted on PostgreSQL; CI runs it there")
    main, second = EXTRACT[path]
    on = path != "portable"
    for raters in (3, 9):
        campaign = _campaign(researcher, raters)
        runs = [functools.partial(campaign_data, campaign), functools.partial(campaign_data, campaign, table=True),
                functools.partial(report_build, campaign=campaign, options=ReportOptions(n_boot=10))]
        for run in runs:
            with fastpath.forced("report_extract", on), fastpath.forced("answers_csv", on), statements() as seen:
                if path == "fast_in_transaction":
                    with transaction.atomic():
                        run()
                else:
                    run()
            here = [sql for thread, sql in seen if thread == threading.current_thread().name]
            assert (len(here), len(seen) - len(here)) == (main, second), seen
            if path == "fast":
                assert sum("pg_export_snapshot" in sql for sql in here) == 1
                assert sum("SET TRANSACTION SNAPSHOT" in sql for _, sql in seen) == 1


@pytest.mark.parametrize("on", [True, False], ids=["fast", "portable"])
def test_report_get_and_the_csv_export_run_an_exact_number_of_queries(researcher: User, on: bool) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("both twins are counted on PostgreSQL; CI runs it there")
    extract = sum(EXTRACT["fast" if on else "portable"])
    for raters in (3, 9):
        campaign = _campaign(researcher, raters)
        options = ReportOptions(n_boot=10)
        with fastpath.forced("report_extract", on), fastpath.forced("answers_csv", on):
            with statements() as built:
                report_get(campaign=campaign, options=options)
            with statements() as cached:
                state, report = report_get(campaign=campaign, options=options)
            with statements() as exported:
                report_csv_zip(campaign=campaign, report=report, options=options)
        # Snapshot key (the data revision: the campaign's counter, the answers' count and highest id) +
        # snapshot lookup; a miss adds the request work budget's estimate (the consented demographics,
        # the answer count, the image count: metrics/snapshots/budget.py), the build, and the store
        # (update_or_create: SAVEPOINT, SELECT ... FOR UPDATE, INSERT, RELEASE) and the stale delete.
        assert len(cached) == 3 and state == "ready"
        assert len(built) == 3 + 3 + extract + 4 + 1, built
        assert len(exported) == extract  # one extraction, answers.csv included


@pytest.mark.parametrize("source", ["clip_cls", "hybrid:clip_cls"])
def test_a_machine_source_adds_an_exact_number_of_queries(researcher: User, source: str) -> None:
    """A machine or hybrid source reads three more things (the labeller's labels, the human sample,
    the CLIPScores: `metrics/extract/machine.py`) and checks the labeller has labels (one query); the
    human report reads none of them (counted above). New machine labels (an import, a run) move the
    data revision: the report is rebuilt."""
    if connection.vendor != "postgresql":
        pytest.skip("counted on PostgreSQL; CI runs it there")
    from autolabel.importer import machine_labels_import
    from autolabel.models import MachineLabel

    extract = sum(EXTRACT["fast"])
    for raters in (3, 9):
        campaign = _campaign(researcher, raters)
        MachineLabel.objects.bulk_create([MachineLabel(campaign=campaign, question=q, labeller="clip_cls",
                                                       choice=q.choices[0], score=0.7)
                                          for q in campaign.questions.filter(is_gold=False)])
        options = ReportOptions(n_boot=10, source=source)
        with fastpath.forced("report_extract", True), fastpath.forced("answers_csv", True):
            with statements() as built:
                report_build(campaign=campaign, options=options)
            with statements() as got:
                report_get(campaign=campaign, options=options)
            with statements() as cached:
                state, _ = report_get(campaign=campaign, options=options)
        assert len(built) == extract + 3, built
        assert len(cached) == 1 + 3 and state == "ready", cached
        assert len(got) == 1 + 3 + 3 + extract + 3 + 4 + 1, got  # the budget estimate: 3
        first = MachineLabel.objects.filter(campaign=campaign).select_related("question").first()
        machine_labels_import(campaign=campaign, labeller="clip_cls", name="labels.csv", data=(
            f"image,attribute,choice\n{first.question.image_id},{first.question.slot},{first.question.choices[1]}\n"
        ).encode())
        with fastpath.forced("report_extract", True), fastpath.forced("answers_csv", True), statements() as again:
            report_get(campaign=campaign, options=options)
        assert len(again) == len(got), again  # rebuilt: the machine labels changed


@pytest.mark.parametrize("on", [True, False], ids=["fast", "portable"])
def test_the_csv_export_of_a_report_not_built_yet_reads_the_data_once(researcher: User, on: bool) -> None:
    """`?format=csv` when no snapshot is ready: one extraction (with the answer table) builds the report,
    its snapshot and the tables; the next one reads the snapshot and extracts once for the tables."""
    if connection.vendor != "postgresql":
        pytest.skip("both twins are counted on PostgreSQL; CI runs it there")
    extract = sum(EXTRACT["fast" if on else "portable"])
    for raters in (3, 9):
        campaign = _campaign(researcher, raters)
        options = ReportOptions(n_boot=10)
        with fastpath.forced("report_extract", on), fastpath.forced("answers_csv", on):
            with statements() as fresh:
                state, body = report_csv_get(campaign=campaign, options=options)
            with statements() as again:
                state_again, body_again = report_csv_get(campaign=campaign, options=options)
        assert state == state_again == "ready"
        assert len(fresh) == 3 + 3 + extract + 4 + 1, fresh  # as report_get's build: one extraction
        assert len(again) == 3 + extract, again
        first, second = (zipfile.ZipFile(io.BytesIO(b)) for b in (body, body_again))
        assert first.namelist() == second.namelist() and "answers.csv" in first.namelist()
        # The tables read from the data are the same (the report's own tables may list keys in another
        # order: a snapshot's payload comes back from jsonb with its keys reordered).
        assert all(first.read(n) == second.read(n) for n in ("answers.csv", "labels.csv"))
