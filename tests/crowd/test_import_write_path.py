"""Regression (issue 21): the MTurk batch import went around the write path and left the stored
majority labels (`AggregatedLabel`) stale: after an import, answered questions had no stored label,
so labels.csv and everything reading stored labels disagreed with the report. Through HTTP: the
import endpoint, then the report's labels.csv and the campaign's progress."""
from __future__ import annotations

import csv
import io
import json
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import AggregatedLabel, Question
from campaigns.models import Campaign
from tests.builders.crowd import MAPPING, M, W, batch_csv, small  # noqa: F401  (fixture)
from tests.conftest import token_client

pytestmark = pytest.mark.django_db


def _labels_csv(api: Any, campaign_id: int) -> dict[int, tuple[str, str]]:
    resp = api.get(f"/api/campaigns/{campaign_id}/report/?format=csv&n_boot=0&n_perm=0")
    assert resp.status_code == 200, resp.content
    text = zipfile.ZipFile(io.BytesIO(resp.content)).read("labels.csv").decode()
    return {int(r["question_id"]): (r["label"], r["votes"]) for r in csv.DictReader(io.StringIO(text))}


def test_an_mturk_batch_import_stores_the_labels_the_report_computes(small: Campaign, researcher: User) -> None:
    api = token_client(researcher)
    before = _labels_csv(api, small.pk)
    data = batch_csv([["H1", "A1", "X1", "Submitted", "20", "in boots", W, M, "false", "true", "true", "false"],
                      ["H1", "A2", "X2", "Approved", "30", "in boots", W, M, "false", "true", "true", "false"],
                      ["H1", "A3", "X3", "Approved", "30", "in boots", W, M, "false", "false", "true", "true"]])
    resp = api.post(f"/api/campaigns/{small.pk}/mturk/import/",
                    {"file": SimpleUploadedFile("batch.csv", data), "mapping": json.dumps(MAPPING)}, format="multipart")
    assert resp.status_code == 200, resp.content
    assert resp.json()["answers"] == 6
    report = _labels_csv(api, small.pk)
    stored = {lab.question_id: lab for lab in AggregatedLabel.objects.filter(question__campaign=small)}
    assert len(report) == 2 and len(stored) == 2
    assert {qid: lab.label for qid, lab in stored.items()} == {qid: label for qid, (label, _) in report.items()}
    assert sorted(lab.label for lab in stored.values()) == ["No", "Yes"]
    # The counters follow the rows, and the report is not the one cached before the import.
    assert sorted(Question.objects.filter(campaign=small).values_list("completed", flat=True)) == [3, 3]
    assert before != report
    progress = api.get(f"/api/campaigns/{small.pk}/").json()["progress"]
    assert progress.get("labels_tied", 0) == 0
