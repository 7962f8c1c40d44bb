"""HTML of a report: the context both report pages use (the API's self-contained page and the
console's), built from the report dict by the registered section renderers; and the comparison's
figures. Pure: no database."""
from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from metrics.compare.rows import metric_label
from metrics.extract.data import CampaignFacts

from . import charts
from .methods import methods_sentence
from .registry import sections_of


def _section_warnings(warnings: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The warnings whose path is the section `key` or lies under it (`pst`, `pst.gap.micro_ci`)."""
    return [w for w in warnings if w.get("path") == key or str(w.get("path", "")).startswith(key + ".")]


def report_page(report: dict[str, Any]) -> dict[str, Any]:
    """Template context of a built report: `sections` (each with its partial `template`, its report
    `section`, its table `rows` and its `warnings`, in order), `other_warnings` (those of sections
    not shown) and `figures` ((caption, inline SVG) of every section)."""
    parts = sections_of(report)
    warnings = report.get("warnings") or []
    shown = {r.key for r, _ in parts}
    return {
        "report": report,
        "sections": [{"key": r.key, "template": r.template, "section": sec, "rows": r.rows(sec),
                      "warnings": _section_warnings(warnings, r.key)} for r, sec in parts],
        # Warnings of a section the report does not show (left out whole): listed at the top.
        "other_warnings": [w for w in warnings if str(w.get("path", "")).split(".")[0] not in shown],
        "figures": [figure for r, sec in parts for figure in r.charts(sec)],
        "methods_sentence": methods_sentence(report),
    }


def report_html(*, campaign: CampaignFacts, report: dict[str, Any], query: str = "") -> str:
    """A self-contained HTML report (inline SVG charts; works without JavaScript)."""
    return render_to_string("metrics/report.html", {"campaign": campaign, "query": query, **report_page(report)})


def compare_page(result: dict[str, Any]) -> dict[str, Any]:
    """Template context of a comparison (`metrics.compare.services.report_compare`'s result): metric labels and one
    bar chart per compared metric."""
    labels = [(m, metric_label(m)) for m in result["metrics"]]
    return {"metric_labels": labels,
            "figures": [(label, charts.comparison_chart(result["rows"], m, label)) for m, label in labels]}
