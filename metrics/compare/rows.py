"""The comparison of several campaigns of one kind (like GEP Table 3): headline figures side by side,
from their reports (pure: the reports are built or read by `metrics.compare.services.report_compare`).

The compared figures are data (`COMPARE_METRICS`): a metric names where its value and interval sit in
a report. Adding a compared figure is one entry. The significance tests between campaigns are
computed from the campaigns' data, not from their reports: `metrics/sections/significance.py` (keys
`significance`, `pooled_agreement`), run and cached by `metrics/compare/services.py`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.errors import ApplicationError
from metrics.extract.data import CampaignFacts


@dataclass(frozen=True)
class CompareMetric:
    key: str                       # the row key (and `<key>_ci` for its interval)
    label: str                     # how pages and charts name it
    path: tuple[str, ...]          # where the value sits in a report
    ci_path: tuple[str, ...] | None = None


COMPARE_METRICS: dict[str, tuple[CompareMetric, ...]] = {
    "gep": (CompareMetric("gep_neutral", "GEP score, neutral", ("gep", "neutral", "score"), ("gep", "neutral", "score_ci")),
            CompareMetric("gep_explicit", "GEP score, explicit", ("gep", "explicit", "score"),
                          ("gep", "explicit", "score_ci"))),
    "pst": (CompareMetric("sts_single", "STS single (%)", ("pst", "single", "overall"), ("pst", "single", "overall_ci")),
            CompareMetric("sts_paired", "STS paired (%)", ("pst", "paired", "overall"), ("pst", "paired", "overall_ci")),
            CompareMetric("sts_gap", "Gap paired - single", ("pst", "gap", "overall"))),
}


def metric_label(key: str) -> str:
    return next((m.label for ms in COMPARE_METRICS.values() for m in ms if m.key == key), key)


def _dig(report: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = report
    for part in path:
        value = (value or {}).get(part) if isinstance(value, dict) or value is None else None
    return value


def compare_kind(campaigns: list[CampaignFacts]) -> str:
    """The one kind of the compared campaigns (400 naming `campaigns` when they mix kinds)."""
    kinds = {c.kind for c in campaigns}
    if len(kinds) != 1:
        raise ApplicationError("Compare campaigns of one kind (all PST or all GEP).",
                               errors={"campaigns": [f"mixed kinds: {', '.join(sorted(kinds))}"]})
    return kinds.pop()


def compare_from_reports(entries: list[tuple[CampaignFacts, dict[str, Any]]]) -> dict[str, Any]:
    """{kind, metrics: [keys], rows: [{id, name, label, backend, model, answers, krippendorff_alpha,
    fleiss_kappa, <metric>, <metric>_ci, ...}]} for (campaign, report) pairs of one kind."""
    kind = compare_kind([c for c, _ in entries])
    metrics = COMPARE_METRICS[kind]
    rows = []
    for campaign, report in entries:
        backend = campaign.spec.get("backend") or {}
        row: dict[str, Any] = {"id": campaign.pk, "name": campaign.name, "label": campaign.name,
                               "backend": backend.get("name"), "model": backend.get("model"),
                               "answers": report["counts"]["answers"],
                               "krippendorff_alpha": report["agreement"]["overall"]["krippendorff_alpha"],
                               "fleiss_kappa": report["agreement"]["overall"]["fleiss_kappa"]}
        for m in metrics:
            row[m.key] = _dig(report, m.path)
            if m.ci_path is not None:
                row[f"{m.key}_ci"] = _dig(report, m.ci_path)
        rows.append(row)
    return {"kind": kind, "metrics": [m.key for m in metrics], "rows": rows}
