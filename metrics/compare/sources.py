"""Label sources compared across campaigns (GEP Table 6 shape): each source's headline score per
campaign and setting, its rank, and Kendall's tau-b (with Pearson's r) between each source's scores
and the human ones. Pure: from built reports (`metrics.compare.services.report_compare` builds them per source).

A source's score: human, the report's own (`gep.<setting>.score`, `pst.<setting>.overall`); a
labeller, its `auto.<labeller>.gep.<setting>.score` (GEP_C / GEP_CC / GEP_CLS from its scores where it
has them) or, for PST, the machine report's STS; `hybrid:<labeller>`, the hybrid estimate.
"""
from __future__ import annotations

from typing import Any

from campaigns.spec import GEP, GEP_SETTINGS, PAIRED, SINGLE
from metrics.core.machine import vector_agreement
from metrics.extract.data import CampaignFacts
from metrics.options import ReportOptions

SETTINGS = {"gep": GEP_SETTINGS, "pst": (SINGLE, PAIRED)}


def _dig(value: Any, *path: str) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def source_score(kind: str, report: dict[str, Any], source: str, setting: str) -> float | None:
    if source == "human":
        return _dig(report, "gep", setting, "score") if kind == GEP else _dig(report, "pst", setting, "overall")
    if source.startswith("hybrid:"):
        lab = source[len("hybrid:"):]
        name = "score" if kind == GEP else "overall"
        return _dig(report, "hybrid", lab, setting, name, "estimate")
    if kind == GEP:
        auto = _dig(report, "auto", source, "gep", setting, "score")
        return auto if auto is not None else _dig(report, "gep", setting, "score")
    return _dig(report, "pst", setting, "overall")


def compare_source_options(params: Any) -> tuple[ReportOptions, list[str]]:
    """The compare edge's `source`: one source or several, comma-separated. The first is the report
    option (the comparison's rows come from its reports); the others are compared too. A bad one is a
    400 naming `source`."""
    raw = params.get("source", "") or ""
    sources = [s.strip() for s in str(raw).split(",") if s.strip()]
    rest = {k: params.get(k) for k in params if k != "source"}
    options = ReportOptions.from_params({**rest, "source": sources[0] if sources else ""})
    for s in sources[1:]:
        ReportOptions(source=s)
    return options, sources[1:]


def _ranks(values: list[float | None]) -> list[int | None]:
    order = sorted((v, i) for i, v in enumerate(values) if v is not None)
    out: list[int | None] = [None] * len(values)
    for r, (_, i) in enumerate(order, start=1):
        out[i] = r
    return out


def sources_comparison(kind: str, campaigns: list[CampaignFacts],
                       reports: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """`reports[source]`: one report per campaign (same order). Returns `{"compared": [sources],
    "rows": [{"campaign", "name", "setting", "<source>": score, "<source>_rank": rank}],
    "agreement": {source: {"kendall_tau_b", "kendall_tau_b_p", "pearson", "n"}}}` (each source against
    "human"; rows are every campaign x setting that the human report has)."""
    sources = list(reports)
    rows = []
    for i, facts in enumerate(campaigns):
        for setting in SETTINGS[kind]:
            row: dict[str, Any] = {"campaign": facts.pk, "name": facts.name, "setting": setting}
            for s in sources:
                row[s] = source_score(kind, reports[s][i], s, setting)
            if any(row[s] is not None for s in sources):
                rows.append(row)
    for s in sources:
        for row, rank in zip(rows, _ranks([r[s] for r in rows]), strict=True):
            row[f"{s}_rank"] = rank
    agreement = {}
    for s in sources:
        if s == "human":
            continue
        res = vector_agreement([_num(r[s]) for r in rows], [_num(r["human"]) for r in rows])
        agreement[s] = {k: res[k] for k in ("kendall_tau_b", "kendall_tau_b_p", "pearson", "n")}
    return {"compared": sources, "rows": rows, "agreement": agreement}


def _num(v: Any) -> float:
    return float("nan") if v is None else float(v)
