"""The report's top-level `warnings` (metrics/core/report_warnings.py): a section builder's `warn`
lands in `report["warnings"]` as {path, message}; the HTML shows it next to its section, the CSV zip
has warnings.csv; outside a report build `warn` does nothing."""
from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User

from metrics import render
from metrics.core.report_warnings import collecting, section_warnings, warn
from metrics.extract import CampaignFacts, campaign_data
from metrics.options import ReportOptions
from metrics.sections import report as report_module
from metrics.sections.report import label_table, report_from_data
from tests.builders.metrics import SMALL_PST, annotators, answer_all, campaign_with_questions, stereotyped


def test_warn_collects_inside_a_block_only() -> None:
    warn("pst.gap.micro_ci", "ignored: no report is being built")
    with collecting() as log:
        warn("pst.gap.micro_ci", "3 single images per identity")
        warn("pst.gap.micro_ci", "3 single images per identity")  # once per path and message
        with collecting() as inner:  # a nested build joins the outer log
            warn("hybrid.x", "y")
        assert inner is log
    assert log.as_list() == [{"path": "pst.gap.micro_ci", "message": "3 single images per identity"},
                             {"path": "hybrid.x", "message": "y"}]
    with collecting() as fresh:
        pass
    assert fresh.as_list() == []
    assert section_warnings(log.as_list(), "pst") == [log.as_list()[0]]
    assert section_warnings(log.as_list(), "ps") == []


@pytest.mark.django_db
def test_a_section_warning_reaches_json_html_and_csv(researcher: User, monkeypatch: Any) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_PST)
    answer_all(campaign, questions, stereotyped, annotators(3, "warn-"))
    options = ReportOptions(n_boot=20, n_perm=20)
    data = campaign_data(campaign, table=True)
    before = report_from_data(data, options)["warnings"]
    assert all(set(w) == {"path", "message"} and w["path"] != "nowhere.figure" for w in before)

    def flagging(*args: Any, **kwargs: Any) -> dict[str, Any]:
        warn("pst.gap.micro_ci", "2 single images per identity: per-identity gap interval not computed")
        warn("nowhere.figure", "a section the report does not show")
        return {}

    monkeypatch.setitem(report_module._SECTION_BUILDERS, "zz_flagging", flagging)
    report = report_from_data(data, options)
    assert {"path": "pst.gap.micro_ci",
            "message": "2 single images per identity: per-identity gap interval not computed"} in report["warnings"]
    page = render.report_page(report)
    pst_part = next(p for p in page["sections"] if p["key"] == "pst")
    assert "2 single images per identity: per-identity gap interval not computed" in [
        w["message"] for w in pst_part["warnings"]]
    assert {w["path"] for w in pst_part["warnings"]} - {
        "pst.gender_balance.single.neutrality_ci", "pst.gender_balance.paired.neutrality_ci"} == {"pst.gap.micro_ci"}
    assert [w["path"] for w in page["other_warnings"]] == ["nowhere.figure"]
    html = render.report_html(campaign=CampaignFacts.of(campaign), report=report)
    # Shown just above its section's heading.
    assert 0 < html.index("Stereotype Test Scores") - html.index("per-identity gap interval not computed") < 400
    assert "report-warnings" in html and "a section the report does not show" in html
    blob = render.report_csv_zip(report=report, data=data, labels=label_table(data, options))
    text = zipfile.ZipFile(io.BytesIO(blob)).read("warnings.csv").decode()
    assert text.splitlines()[0] == '"path","message"' and "pst.gap.micro_ci" in text
