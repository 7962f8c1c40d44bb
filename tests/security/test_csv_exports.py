"""Issue 13, point 5: every CSV the product writes is safe to open in a spreadsheet (common/csvsafe.py):
text cells beginning with =, +, -, @, tab or CR get a leading quote; numbers stay numbers; the JSON
stays exact. Through the API (payments.csv, the report's CSV zip), the helper on its own, and a
source check that no CSV is written any other way."""
from __future__ import annotations

import csv
import io
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from common.csvsafe import TRIGGERS, csv_cell, csv_cell_restore, csv_dict_writer, csv_frame, csv_writer
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign
from tests.builders.metrics import SMALL_GEP, messy_campaign

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


def _unsafe_cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row
            if cell.startswith(TRIGGERS) and not NUMBER.match(cell)]


def test_payments_csv_neutralises_usernames_and_external_ids(api: APIClient, researcher: User) -> None:
    campaign = open_campaign(make_images_campaign(researcher))
    annotator, client = make_annotator("-2+3", campaign=campaign)  # a valid username, a formula in a sheet
    # External ids that are formulas no longer get in at all (one external-id rule, issue 24) ...
    refused = client.patch("/api/annotators/me/", {"prolific_pid": '=HYPERLINK("http://evil.example","x")',
                                                   "mturk_worker_id": "@SUM(1+1)",
                                                   "password": "-2+3-Secret-pass-9"}, format="json")
    assert refused.status_code == 400 and {"prolific_pid", "mturk_worker_id"} & set(refused.json()["errors"])
    # ... and a valid id that a sheet would read as a formula is still neutralised on the way out.
    patched = client.patch("/api/annotators/me/", {"mturk_worker_id": "-A1", "password": "-2+3-Secret-pass-9"},
                           format="json")
    assert patched.status_code == 200 and patched.json()["mturk_worker_id"] == "-A1"  # the JSON stays exact
    make_annotator("@cmd", campaign=campaign)
    response = api.get(f"/api/campaigns/{campaign.pk}/payments.csv")
    assert response.status_code == 200
    text = response.content.decode()
    assert _unsafe_cells(text) == []
    rows = {r["annotator"]: r for r in csv.DictReader(io.StringIO(text))}
    row = rows[str(annotator.pk)]
    assert row["username"] == "'-2+3" and row["mturk_worker_id"] == "'-A1"
    assert csv_cell_restore(row["mturk_worker_id"]) == "-A1"


def make_images_campaign(researcher: User):  # type: ignore[no-untyped-def]
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 2})
    make_images(campaign, "explicit", 2)
    return campaign


def test_report_csv_zip_neutralises_every_table(api: APIClient, researcher: User) -> None:
    campaign = messy_campaign(researcher, SMALL_GEP, seed=3)  # answers and metadata like "=SUM(A1)"
    response = api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=0")
    assert response.status_code == 200
    zf = zipfile.ZipFile(io.BytesIO(response.content))
    names = [n for n in zf.namelist() if n.endswith(".csv")]
    assert {"answers.csv", "labels.csv"} <= set(names)
    for name in names:
        assert _unsafe_cells(zf.read(name).decode()) == [], name
    assert "'=SUM(A1)" in zf.read("answers.csv").decode()
    # Negative numbers written as numbers are left alone (GEP context scores, STS).
    assert csv_cell(-11.11) == -11.11


def test_csv_helper_unit() -> None:
    for text in ("=1+1", "+1", "-1+2", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("a")'):
        assert csv_cell(text) == "'" + text and csv_cell_restore(csv_cell(text)) == text
    for value in ("plain", "", "'quoted", "a=b", 3, -2.5, None, True):
        assert csv_cell(value) == value
    assert csv_cell_restore("'plain") == "'plain"
    out = io.StringIO()
    w = csv_writer(out, lineterminator="\n")
    w.writerow(["=x", -3, "ok"])
    w.writerows([["@y", 1.5]])
    d = csv_dict_writer(out, ["a", "b"], lineterminator="\n")
    d.writeheader()
    d.writerow({"a": "+z", "b": -1})
    # Every text cell quoted (QUOTE_NONNUMERIC), numbers bare.
    assert out.getvalue() == '"\'=x",-3,"ok"\n"\'@y",1.5\n"a","b"\n"\'+z",-1\n'
    import pandas as pd

    frame = pd.DataFrame({"name": ["-bad", "good"], "score": [-11.11, 2.0]})
    assert csv_frame(frame, index=False, lineterminator="\n") == '"name","score"\n"\'-bad",-11.11\n"good",2.0\n'


def test_no_csv_is_written_around_the_helper() -> None:
    """A CSV writer anywhere in the product code but common/csvsafe.py would bypass the rule."""
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    offenders = []
    for name in files:
        if name.startswith(("tests/", "bench/")) or name == "common/csvsafe.py" or "/migrations/" in name:
            continue
        source = (ROOT / name).read_text(encoding="utf-8")
        if re.search(r"csv\.(writer|DictWriter)\(|\.to_csv\(|COPY\s*\(.*\)\s*TO\b", source):
            offenders.append(name)
    assert offenders == []


def test_every_text_cell_is_quoted_in_the_report_csvs(api: APIClient, researcher: User) -> None:
    """Issue 24: `a;=1+1;b` unquoted is a formula after the first `;` in a semicolon-separated sheet:
    every text cell is quoted (QUOTE_NONNUMERIC), numbers stay bare."""
    campaign = messy_campaign(researcher, SMALL_GEP, seed=3)
    response = api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=0")
    assert response.status_code == 200
    zf = zipfile.ZipFile(io.BytesIO(response.content))
    for name in ("labels.csv", "answers.csv"):
        text = zf.read(name).decode()
        assert "\"'=SUM(A1)\"" in text, name
        header = text.splitlines()[0]
        assert all(cell.startswith('"') and cell.endswith('"') for cell in header.split(",")) or name == "answers.csv"
        assert len(list(csv.reader(io.StringIO(text, newline="")))) > 1  # still valid CSV
    out = io.StringIO()
    csv_writer(out, lineterminator="\n").writerow(["a;=1+1;b", 2, -1.5, "x"])
    assert out.getvalue() == '"a;=1+1;b",2,-1.5,"x"\n'
