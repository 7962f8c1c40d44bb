"""MTurk batch-results import: the GEP paper's real exports reproduce its published figures; bad
rows are reported row by row and nothing is half-imported."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from annotation.models import Answer, Assignment
from campaigns.models import Campaign
from campaigns.services import campaign_create
from crowd.models import MTurkAssignmentRecord
from crowd.mturk_batch import BatchImportError, mturk_batch_import
from generation.importer import images_import
from generation.models import Image
from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.crowd import MAPPING, M, W, small  # noqa: F401  (fixture)
from tests.builders.crowd import batch_csv as _csv
from tests.builders.gep_data import DATA, batch_files, manifest_for
from tests.builders.intervals import interval_violations
from tests.builders.metrics import make_questions

pytestmark = pytest.mark.django_db
REF = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "reference" / "gep_tables.json").read_text())
ATTRS = REF["attributes"]


def gep_campaign(owner: User, model: str, name: str) -> Campaign:
    campaign = campaign_create(owner=owner, spec={"name": name, "kind": "gep", "seed": 1, "design": {},
                                                  "backend": {"name": "import", "model": model}})
    images_import(campaign=campaign, manifest_name="manifest.csv", manifest=manifest_for(model))
    images = list(Image.objects.filter(campaign=campaign).select_related("prompt"))
    make_questions(campaign, images)
    return campaign


def test_the_gep_paper_exports_reproduce_its_tables(researcher: User) -> None:
    assert DATA.is_dir(), f"GEP MTurk exports not found at {DATA}"
    sd = gep_campaign(researcher, "stable", "gep-stable-diffusion")
    dalle = gep_campaign(researcher, "dalle", "gep-dalle-2")
    cogview = gep_campaign(researcher, "cogview2", "gep-cogview2")
    assert Image.objects.filter(campaign=sd).count() == 2560  # 2 genders x 256 prompts x 5 samples
    totals: dict[str, Any] = {"rows": 0, "skipped": 0}
    for path in batch_files("stable"):
        result = mturk_batch_import(campaigns=[sd], data=path.read_bytes())
        totals["rows"] += result.rows
        totals["skipped"] += result.skipped_rows
    for path in batch_files("dalle"):
        mturk_batch_import(campaigns=[dalle, cogview], data=path.read_bytes())
    assert totals["skipped"] == 5  # the rejected and redone assignments of dress, jacket, shirt, slippers
    # Every image judged by 3 workers once rejected assignments are dropped.
    assert Answer.objects.filter(campaign=sd).count() == 15 * 320 * 3
    reports = {name: report_build(campaign=c, options=ReportOptions(n_boot=200))
               for name, c in (("Stable Diffusion", sd), ("DALLE-2", dalle), ("CogView2", cogview))}
    boots = reports["Stable Diffusion"]["gep"]
    # The example: boots / Stable Diffusion, neutral 0.06 vs 0.04, explicit 0.66 vs 0.57.
    assert round(boots["neutral"]["frequencies"]["woman"]["boots"], 2) == 0.06
    assert round(boots["neutral"]["frequencies"]["man"]["boots"], 2) == 0.04
    assert round(boots["explicit"]["frequencies"]["woman"]["boots"], 2) == 0.66
    assert round(boots["explicit"]["frequencies"]["man"]["boots"], 2) == 0.57
    mismatches = []
    for model, report in reports.items():
        for setting, table in (("neutral", "table11_neutral_frequencies"), ("explicit", "table12_explicit_frequencies")):
            published = REF[table][model]
            for i, attribute in enumerate(ATTRS):
                for gender, row in (("woman", "women"), ("man", "men")):
                    ours = report["gep"][setting]["frequencies"][gender][attribute]
                    if abs(ours - published[row][i]) > 0.005 + 1e-9:
                        mismatches.append((model, setting, attribute, gender, round(ours, 4), published[row][i]))
            score = report["gep"][setting]["score"]
            assert round(score, 2) == REF["table3_gep"][setting][model], (model, setting, score)
    # The published frequencies were computed from these very exports (majority of 3, ties impossible).
    assert not mismatches, mismatches
    # The interval: CogView2 neutral GEP 0.0233 had the percentile interval [0.0248, 0.0534]; the
    # report's test-inversion interval holds it, as every interval of every report holds its estimate.
    cog = reports["CogView2"]["gep"]["neutral"]
    assert round(cog["score"], 4) == 0.0233 and cog["score_ci_method"] == "gep-test-inversion"
    assert cog["score_ci"][0] <= cog["score"] <= cog["score_ci"][1] and cog["score_ci"][0] == 0.0
    assert all(interval_violations(r) == [] for r in reports.values())
    alpha = reports["Stable Diffusion"]["agreement"]["overall"]["krippendorff_alpha"]
    assert 0.70 < alpha < 0.90  # the paper states 0.81 for its annotation
    assert MTurkAssignmentRecord.objects.filter(campaign=sd).count() == sum(
        1 for p in batch_files("stable") for r in csv.DictReader(io.StringIO(p.read_text(), newline=""))
        if r["AssignmentStatus"] != "Rejected")




def test_a_good_small_batch(small: Campaign) -> None:
    data = _csv([["H1", "A1", "X1", "Submitted", "20", "in boots", W, M, "false", "true", "true", "false"],
                 ["H1", "A2", "X2", "Approved", "30", "in boots", W, M, "false", "true", "true", "false"],
                 ["H1", "A3", "X3", "Rejected", "5", "in boots", W, M, "true", "true", "false", "false"]])
    result = mturk_batch_import(campaigns=[small], data=data, mapping=MAPPING)
    assert result.as_dict() | {} == {"rows": 3, "assignments": 2, "answers": 4, "skipped_rows": 1,
                                     "skipped_by_status": {"Rejected": 1}, "workers": 2, "questions": 2}
    assert sorted(Answer.objects.filter(campaign=small).values_list("question__image__source_url", "choice")) == [
        (M, "No"), (M, "No"), (W, "Yes"), (W, "Yes")]
    assert Assignment.objects.get(mturk_record__mturk_assignment_id="X2").review == "approved"
    assert Answer.objects.filter(annotator__mturk_worker_id="A1").first().time_ms == 10000
    with pytest.raises(BatchImportError, match="already imported"):
        mturk_batch_import(campaigns=[small], data=data, mapping=MAPPING)


@pytest.mark.parametrize(("row", "message"), [
    (["H1", "A1", "X1", "Submitted", "20", "in boots", "https://img.example/nope.png", M, "true", "true", "false", "false"],
     "unknown image URL"),
    (["H1", "A1", "X1", "Submitted", "20", "in boots", W, M, "true", "true", "true", "false"], "both"),
    (["H1", "A1", "X1", "Submitted", "20", "in boots", W, M, "false", "true", "false", "false"], "no choice"),
    (["H1", "A1", "X1", "Submitted", "20", "in hats", W, M, "true", "true", "false", "false"], "unknown attribute"),
    (["H1", "A1", "X1", "Submitted", "abc", "in boots", W, M, "true", "true", "false", "false"], "WorkTimeInSeconds"),
])
def test_each_bad_row_is_named_and_nothing_is_written(small: Campaign, row: list[str], message: str) -> None:
    good = ["H0", "A9", "X0", "Submitted", "20", "in boots", W, M, "true", "true", "false", "false"]
    with pytest.raises(BatchImportError) as info:
        mturk_batch_import(campaigns=[small], data=_csv([good, row]), mapping=MAPPING)
    assert "row 3" in info.value.errors and any(message in m for m in info.value.errors["row 3"])
    assert Answer.objects.count() == 0 and Assignment.objects.count() == 0


def test_duplicate_assignments_and_file_problems(small: Campaign) -> None:
    row = ["H1", "A1", "X1", "Submitted", "20", "in boots", W, M, "true", "true", "false", "false"]
    with pytest.raises(BatchImportError) as info:
        mturk_batch_import(campaigns=[small], data=_csv([row, row]), mapping=MAPPING)
    assert "duplicate assignment X1" in info.value.errors["row 3"][0]
    with pytest.raises(BatchImportError, match="not UTF-8"):
        mturk_batch_import(campaigns=[small], data="HITId,Wörker\n".encode("latin-1"), mapping=MAPPING)
    with pytest.raises(BatchImportError, match="lacks the columns"):
        mturk_batch_import(campaigns=[small], data=b"a,b\n1,2\n", mapping=MAPPING)
    with pytest.raises(BatchImportError, match="Input.image_url5"):
        mturk_batch_import(campaigns=[small], data=_csv([row]), mapping={"slots": 6})
    assert Answer.objects.count() == 0


def test_checkbox_spellings_past_the_parsers_memo_read_as_before(small: Campaign) -> None:
    """The pass remembers the truth of the few checkbox spellings an export uses (at most 64): a file with
    many more spellings (case, blanks, junk) is read cell by cell exactly as `_truthy` reads it."""
    import random

    rng = random.Random(7)
    truthy = [f"{p}{w}{s}" for w in ("true", "TRUE", "On", "yes", "1", "checked") for p in ("", " ") for s in ("", "  ")]
    falsy = ["", "false", "0", "no", "off", "FALSE", *(f"junk{i}" for i in range(80))]
    rows, expected = [], []
    for i in range(120):
        cells, choices = [], []
        for _image in range(2):
            yes = rng.random() < 0.5
            cells += [rng.choice(truthy if yes else falsy), rng.choice(falsy if yes else truthy)]
            choices.append("Yes" if yes else "No")
        rows.append([f"H{i}", f"A{i}", f"X{i}", "Submitted", "20", "in boots", W, M,
                     cells[1], cells[3], cells[0], cells[2]])  # No0, No1, Yes0, Yes1 (the header's order)
        expected += [(f"A{i}", W, choices[0]), (f"A{i}", M, choices[1])]
    assert len({*truthy, *falsy}) > 64
    result = mturk_batch_import(campaigns=[small], data=_csv(rows), mapping=MAPPING)
    assert result.answers == 240
    assert sorted(Answer.objects.filter(campaign=small).values_list(
        "annotator__mturk_worker_id", "question__image__source_url", "choice")) == sorted(expected)
