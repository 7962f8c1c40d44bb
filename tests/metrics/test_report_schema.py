"""The report's JSON Schema (issue 21): published at GET /api/schema/report/, a valid Draft 2020-12
schema, and strict where it says so. Every report the tests build is validated against it by
report_build itself (REPORT_SCHEMA_CHECK, on in config/settings/test.py)."""
from __future__ import annotations

import copy
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient

from metrics.options import ReportOptions
from metrics.sections.schema import REPORT_SCHEMA, report_errors, report_validate
from metrics.snapshots.report import report_build
from tests.builders.metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label
from tests.builders.report_types import untyped_keys

pytestmark = pytest.mark.django_db


@pytest.fixture
def gep_report(researcher: User) -> dict[str, Any]:
    campaign, questions = campaign_with_questions(researcher, copy.deepcopy(SMALL_GEP))
    answer_all(campaign, questions, gep_label, annotators(3))
    return report_build(campaign=campaign, options=ReportOptions(n_boot=0, n_perm=0))


def test_the_schema_is_published_to_whoever_reads_the_api_schema() -> None:
    Draft202012Validator.check_schema(REPORT_SCHEMA)
    resp = APIClient().get("/api/schema/report/")  # anonymous, as /api/schema/ (SERVE_PERMISSIONS)
    assert resp.status_code == 200 and APIClient().get("/api/schema/").status_code == 200
    assert resp.json() == REPORT_SCHEMA
    assert set(resp.json()["required"]) >= {"campaign", "options", "counts", "agreement", "warnings", "summary"}


def test_a_built_report_conforms_and_the_check_is_on_in_the_tests(gep_report: dict[str, Any]) -> None:
    assert settings.REPORT_SCHEMA_CHECK is True
    assert report_errors(gep_report) == []
    assert "gep" in gep_report and "pst" not in gep_report
    assert untyped_keys(gep_report) == []
    # a key the builders would write without its TypedDict (and schema) entry is named
    assert untyped_keys({**gep_report, "counts": {**gep_report["counts"], "surprise": 1}}) == ["counts.surprise"]


@pytest.mark.parametrize(("change", "expected"), [
    (lambda r: r.pop("summary"), "<report>: 'summary' is a required property"),
    (lambda r: r.update(surprise={}), "<report>: Additional properties are not allowed ('surprise' was unexpected)"),
    (lambda r: r["warnings"].append({"path": "gep"}), "warnings.0: 'message' is a required property"),
    (lambda r: r.update(pst={"treatment": "paper", "excluded": {}, "identity_groups": {}}), "<report>: "),
    (lambda r: r["gep"]["neutral"].pop("score"), "gep.neutral: 'score' is a required property"),
    (lambda r: r["options"].update(treatment="other"), "options.treatment: 'other' is not one of"),
    (lambda r: r["counts"].update(answers="many"), "counts.answers: 'many' is not of type 'integer'"),
])
def test_a_report_that_strays_is_named(gep_report: dict[str, Any], change: Any, expected: str) -> None:
    broken = copy.deepcopy(gep_report)
    change(broken)
    errors = report_errors(broken)
    assert any(e.startswith(expected) for e in errors), errors
    with pytest.raises(ValueError, match="REPORT_SCHEMA"):
        report_validate(broken)
