"""Contract: answers.csv (and the whole CSV zip) is the same file, byte for byte, whether its columns
come from the PostgreSQL fast transfer (`answers_csv`, `report_extract`) or from the portable
readers; and each row holds the stored values exactly (checked against the ORM row by row), on data
with corrections, blocked annotators, gold, an excluded image, ties and odd text."""
from __future__ import annotations

import csv
import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from annotation.models import Answer
from common import fastpath
from common.csvsafe import csv_cell, csv_cell_restore
from metrics.extract import campaign_data
from metrics.options import ReportOptions
from metrics.package.exports import report_csv_zip
from metrics.render import answers_csv_write
from metrics.snapshots.report import report_build
from tests.builders.metrics import ODD_TEXT, SMALL_GEP, SMALL_PST, messy_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the contract runs both twins on PostgreSQL; CI runs it there")


def _zip(campaign: Any, options: ReportOptions, *, fast: bool) -> zipfile.ZipFile:
    report = report_build(campaign=campaign, options=options)
    with fastpath.forced("answers_csv", fast), fastpath.forced("report_extract", fast):
        return zipfile.ZipFile(io.BytesIO(report_csv_zip(campaign=campaign, report=report, options=options)))


def _answers_csv(campaign: Any, *, fast: bool) -> str:
    with fastpath.forced("answers_csv", fast), fastpath.forced("report_extract", fast):
        data = campaign_data(campaign, table=True)
    out = io.StringIO(newline="")
    answers_csv_write(data.table, data.campaign.meta_keys, out, chunk=17)  # several chunks
    return out.getvalue()


@pytest.mark.parametrize("spec", [SMALL_PST, SMALL_GEP], ids=["pst", "gep"])
def test_answers_csv_is_the_same_file_from_either_twin(researcher: User, spec: dict[str, Any]) -> None:
    campaign = messy_campaign(researcher, spec, seed=6)  # odd text in choices too
    fast = _answers_csv(campaign, fast=True)
    assert fast == _answers_csv(campaign, fast=False)
    assert fast.count("\n") >= Answer.objects.filter(campaign=campaign).count()


@pytest.mark.parametrize("spec", [SMALL_PST, SMALL_GEP], ids=["pst", "gep"])
def test_the_csv_zip_is_the_same_file_from_either_twin(researcher: User, spec: dict[str, Any]) -> None:
    campaign = messy_campaign(researcher, spec, seed=7, odd_choices=False)  # a report scores known choices only
    for options in (ReportOptions(n_boot=0), ReportOptions(n_boot=0, exclude_blocked=False)):
        fast, portable = _zip(campaign, options, fast=True), _zip(campaign, options, fast=False)
        assert fast.namelist() == portable.namelist()
        for name in fast.namelist():
            assert fast.read(name) == portable.read(name), name


@pytest.mark.parametrize("spec", [SMALL_PST, SMALL_GEP], ids=["pst", "gep"])
def test_answers_csv_rows_hold_the_stored_values(researcher: User, spec: dict[str, Any]) -> None:
    campaign = messy_campaign(researcher, spec, seed=8)
    text = _answers_csv(campaign, fast=True)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    meta = ["identity", "group", "position", "sample_index", "template_index"] if spec["kind"] == "pst" else \
        ["gender", "attribute", "context", "sample_index", "template_index"]
    assert header[13:] == meta
    stored = list(Answer.objects.filter(campaign=campaign).order_by("id").select_related("question__image"))
    assert len(body) == len(stored)
    superseded = set(Answer.objects.filter(campaign=campaign, corrects__isnull=False).values_list("corrects_id",
                                                                                                   flat=True))
    for row, a in zip(body, stored, strict=True):
        q = a.question
        # Text cells are the stored text, neutralised for spreadsheets (common/csvsafe.py: "=SUM(A1)" is
        # written "'=SUM(A1)"); csv_cell_restore gives the stored text back exactly.
        expected = [str(a.pk), str(q.pk), str(q.image_id), str(a.annotator_id), csv_cell(a.choice),
                    "" if a.time_ms is None else str(a.time_ms),
                    a.created_at.isoformat(timespec="microseconds"), csv_cell(q.setting), csv_cell(q.slot),
                    str(q.is_gold), str(q.image.excluded), "" if a.corrects_id is None else str(a.corrects_id),
                    str(a.pk in superseded),
                    *("" if q.metadata.get(k) is None else csv_cell(str(q.metadata[k])) for k in meta)]
        assert row == expected
        assert csv_cell_restore(row[4]) == a.choice
    values = {v for row in body for v in row}
    assert {t for t in ODD_TEXT if t} & values  # the odd text made it through, exactly
    assert "'=SUM(A1)" in values and "=SUM(A1)" not in values  # and no formula
    assert any("\n" in v for v in values) and any('"' in v for v in values) and any("\t" in v for v in values)
