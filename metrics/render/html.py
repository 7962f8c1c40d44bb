"""HTML of a report: the context both report pages use (the API's self-contained page and the
console's), built from the report dict by the registered section renderers; and the comparison's
figures. Pure: no database."""
from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from metrics.compare.rows import metric_label
from metrics.extract.data import CampaignFacts

from . import charts
from .registry import sections_of


def report_page(report: dict[str, Any]) -> dict[str, Any]:
    """Template context of a built report: `sections` (each with its partial `template`, its report
    `section` and its table `rows`, in order) and `figures` ((caption, inline SVG) of every section)."""
    parts = sections_of(report)
    return {
        "report": report,
        "sections": [{"key": r.key, "template": r.template, "section": sec, "rows": r.rows(sec)} for r, sec in parts],
        "figures": [figure for r, sec in parts for figure in r.charts(sec)],
    }


def report_html(*, campaign: CampaignFacts, report: dict[str, Any], query: str = "") -> str:
    """A self-contained HTML report (inline SVG charts; works without JavaScript)."""
    return render_to_string("metrics/report.html", {"campaign": campaign, "query": query, **report_page(report)})


def compare_page(result: dict[str, Any]) -> dict[str, Any]:
    """Template context of a comparison (`metrics.snapshots.report.report_compare`'s result): metric labels and one
    bar chart per compared metric."""
    labels = [(m, metric_label(m)) for m in result["metrics"]]
    return {"metric_labels": labels,
            "figures": [(label, charts.comparison_chart(result["rows"], m, label)) for m, label in labels]}
