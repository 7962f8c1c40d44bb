"""Reads across reports: the comparison of several campaigns (like GEP Table 3)."""
from __future__ import annotations

from typing import Any

from campaigns.models import Campaign
from common.errors import ApplicationError

from .report import ReportOptions
from .services import report_get


def report_compare(*, campaigns: list[Campaign], options: ReportOptions) -> dict[str, Any]:
    kinds = {c.kind for c in campaigns}
    if len(kinds) != 1:
        raise ApplicationError("Compare campaigns of one kind (all PST or all GEP).",
                               errors={"campaigns": [f"mixed kinds: {', '.join(sorted(kinds))}"]})
    kind = kinds.pop()
    rows = []
    for c in campaigns:
        state, report = report_get(campaign=c, options=options, allow_async=False)
        backend = c.spec.get("backend") or {}
        row: dict[str, Any] = {"id": c.pk, "name": c.name, "label": c.name, "backend": backend.get("name"),
                               "model": backend.get("model"), "answers": report["counts"]["answers"],
                               "krippendorff_alpha": report["agreement"]["overall"]["krippendorff_alpha"],
                               "fleiss_kappa": report["agreement"]["overall"]["fleiss_kappa"]}
        if kind == "gep":
            for setting in ("neutral", "explicit"):
                sec = report["gep"].get(setting) or {}
                row[f"gep_{setting}"] = sec.get("score")
                row[f"gep_{setting}_ci"] = sec.get("score_ci")
        else:
            for setting in ("single", "paired"):
                sec = report["pst"].get(setting) or {}
                row[f"sts_{setting}"] = sec.get("overall")
                row[f"sts_{setting}_ci"] = sec.get("overall_ci")
            row["sts_gap"] = (report["pst"].get("gap") or {}).get("overall")
        rows.append(row)
    metrics = (["gep_neutral", "gep_explicit"] if kind == "gep" else ["sts_single", "sts_paired", "sts_gap"])
    return {"kind": kind, "metrics": metrics, "rows": rows}
