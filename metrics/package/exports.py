"""Exports of a report: the steps that need the database, then `metrics.render` for the bytes.

The CSV zip needs what the report JSON does not hold (every stored answer for answers.csv, the label
and votes of each question for labels.csv): one extraction with the answer table (`table=True`)
gives both, then the labels are computed and rendered. When the report itself is not built yet, that
same extraction builds it (`report_csv_get`): the campaign's data is read once per export. The HTML
page needs only the report.
"""
from __future__ import annotations

from typing import Any

from campaigns.models import Campaign
from metrics import render
from metrics.extract import CampaignFacts, campaign_data
from metrics.extract.data import CampaignData
from metrics.options import ReportOptions
from metrics.sections.labels import label_table
from metrics.snapshots.report import report_get


def _csv_zip(data: CampaignData, report: dict[str, Any], options: ReportOptions) -> bytes:
    return render.report_csv_zip(report=report, data=data, labels=label_table(data, options))


def report_csv_zip(*, campaign: Campaign, report: dict[str, Any], options: ReportOptions) -> bytes:
    """The CSV tables of a built report as a zip (see `metrics.render.report_csv_zip`)."""
    data = campaign_data(campaign, exclude_blocked=options.exclude_blocked, table=True)
    return _csv_zip(data, report, options)


def report_csv_get(*, campaign: Campaign, options: ReportOptions,
                   allow_async: bool = True) -> tuple[str, bytes | dict[str, Any]]:
    """("ready", the zip) or ("building", progress) while a worker builds the report (`report_get`).
    One extraction: the report's snapshot when it is ready, else the report built from the data the
    tables are made of."""
    read: list[CampaignData] = []

    def extract() -> CampaignData:
        read.append(campaign_data(campaign, exclude_blocked=options.exclude_blocked, table=True))
        return read[0]

    state, report = report_get(campaign=campaign, options=options, allow_async=allow_async, extract=extract)
    if state != "ready":
        return state, report
    return "ready", _csv_zip(read[0] if read else extract(), report, options)


def report_html(*, campaign: Campaign, report: dict[str, Any], options: ReportOptions, query: str = "") -> str:
    """A self-contained HTML report (inline SVG charts; works without JavaScript)."""
    return render.report_html(campaign=CampaignFacts.of(campaign), report=report, query=query)
