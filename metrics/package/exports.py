"""Exports of a built report: the steps that need the database, then `metrics.render` for the bytes.

The CSV zip needs what the report JSON does not hold (every stored answer for answers.csv, the label
and votes of each question for labels.csv): one extraction with the answer table (`table=True`)
gives both, then the labels are computed and rendered. The HTML page needs only the report.
"""
from __future__ import annotations

from typing import Any

from campaigns.models import Campaign
from metrics import render
from metrics.extract import CampaignFacts, campaign_data
from metrics.options import ReportOptions
from metrics.sections.report import label_table


def report_csv_zip(*, campaign: Campaign, report: dict[str, Any], options: ReportOptions) -> bytes:
    """The report's CSV tables as a zip (see `metrics.render.report_csv_zip`)."""
    data = campaign_data(campaign, exclude_blocked=options.exclude_blocked, table=True)
    return render.report_csv_zip(report=report, data=data, labels=label_table(data, options))


def report_html(*, campaign: Campaign, report: dict[str, Any], options: ReportOptions, query: str = "") -> str:
    """A self-contained HTML report (inline SVG charts; works without JavaScript)."""
    return render.report_html(campaign=CampaignFacts.of(campaign), report=report, query=query)
