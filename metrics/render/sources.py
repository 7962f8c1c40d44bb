"""The machine-label sections (issue 15): `auto` (agreement of each labeller with the human majority,
PST Table 12 / GEP Tables 16 and 7; the machine GEP vector against the human one, GEP Tables 4, 19,
with the human-vs-machine scatter of GEP Figure 5; CLIPScore per setting) and `hybrid` (prediction-
powered estimates next to the human-only and machine-only ones). HTML tables, CSV files and charts."""
from __future__ import annotations

from typing import Any

from metrics.extract.data import CampaignFacts

from . import charts
from .registry import SectionRenderer, Table, register

STATS = ("cohen_kappa", "accuracy", "mcc", "roc_auc")


def agreement_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per labeller and scope (overall, each setting, each GEP attribute of a setting)."""
    rows = []
    for labeller, auto in section.items():
        agreement = auto.get("agreement") or {}
        scopes = [("overall", agreement.get("overall") or {})]
        for setting, block in (agreement.get("by_setting") or {}).items():
            scopes.append((setting, block))
            scopes += [(f"{setting} / {attr}", b) for attr, b in (block.get("attributes") or {}).items()]
            if block.get("roc_auc_mean") is not None:
                scopes.append((f"{setting} / mean over attributes",
                               {"roc_auc": block["roc_auc_mean"], "roc_auc_ci": block["roc_auc_mean_ci"],
                                "n": block.get("n")}))
        for scope, b in scopes:
            rows.append({"labeller": labeller, "scope": scope, "n": b.get("n"),
                         **{k: b.get(k) for k in STATS}, **{f"{k}_ci": b.get(f"{k}_ci") or [None, None] for k in STATS}})
    return rows


def gep_auto_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"labeller": labeller, "setting": setting, **{k: g.get(k) for k in (
        "basis", "score", "human_score", "kendall_tau_b", "mcc", "pearson", "n")}}
            for labeller, auto in section.items() for setting, g in (auto.get("gep") or {}).items()]


def auto_rows(section: dict[str, Any]) -> dict[str, Any]:
    return {"agreement": agreement_rows(section), "gep": gep_auto_rows(section)}


def auto_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    header = ["labeller", "scope", "n"] + [x for k in STATS for x in (k, f"{k}_ci_low", f"{k}_ci_high")]
    rows = [[r["labeller"], r["scope"], r["n"]] + [x for k in STATS for x in (r[k], *r[f"{k}_ci"])]
            for r in agreement_rows(section)]
    vectors = [[labeller, setting, attr, g["human_vector"].get(attr), value]
               for labeller, auto in section.items() for setting, g in (auto.get("gep") or {}).items()
               for attr, value in g["vector"].items()]
    out = [Table("machine_agreement.csv", header, rows)]
    if vectors:
        out.append(Table("machine_gep_vectors.csv", ["labeller", "setting", "attribute", "human", "machine"],
                         vectors))
    return out


def auto_charts(section: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for labeller, auto in section.items():
        for setting, g in (auto.get("gep") or {}).items():
            svg = charts.vector_scatter(g["human_vector"], g["vector"], f"{labeller} ({g['basis']})", setting)
            if svg:
                out.append((f"Human vs {labeller} GEP vector, {setting} (GEP Fig. 5)", svg))
    return out


AUTO = register(SectionRenderer(key="auto", order=40, template="metrics/sections/auto.html", rows=auto_rows,
                                tables=auto_tables, charts=auto_charts))


def hybrid_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per labeller, setting and estimand (GEP score, vector, frequencies; PST overall, micro
    STS and %F per identity)."""
    rows = []
    for labeller, hy in section.items():
        for setting, block in hy.items():
            if not isinstance(block, dict) or setting in ("sample", "methods"):
                continue
            items: list[tuple[str, dict[str, Any]]] = []
            for name in ("score", "overall"):
                if name in block:
                    items.append((name, block[name]))
            for group in ("vector", "micro", "percent_feminine"):
                items += [(f"{group}[{k}]", v) for k, v in (block.get(group) or {}).items()]
            for gender, row in (block.get("frequencies") or {}).items():
                items += [(f"frequency[{gender}, {a}]", v) for a, v in row.items()]
            rows += [{"labeller": labeller, "setting": setting, "estimand": name, **_flat(v)} for name, v in items]
    return rows


def _flat(v: dict[str, Any]) -> dict[str, Any]:
    return {"estimate": v["estimate"], "ci": v["ci"], "human": v["human_only"]["estimate"],
            "human_ci": v["human_only"]["ci"], "machine": v["machine_only"]["estimate"],
            "machine_ci": v["machine_only"]["ci"], "n_human": v["n_human"], "n_machine": v["n_machine"],
            "saved": v["human_labels_saved"], "method": v["method"]}


def hybrid_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    header = ["labeller", "setting", "estimand", "method", "estimate", "ci_low", "ci_high", "human_only",
              "human_ci_low", "human_ci_high", "machine_only", "machine_ci_low", "machine_ci_high", "n_human",
              "n_machine", "human_labels_saved"]
    rows = [[r["labeller"], r["setting"], r["estimand"], r["method"], r["estimate"], *r["ci"], r["human"],
             *r["human_ci"], r["machine"], *r["machine_ci"], r["n_human"], r["n_machine"], r["saved"]]
            for r in hybrid_rows(section)]
    return [Table("hybrid.csv", header, rows)]


HYBRID = register(SectionRenderer(key="hybrid", order=45, template="metrics/sections/hybrid.html",
                                  rows=hybrid_rows, tables=hybrid_tables))
