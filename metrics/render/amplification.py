"""The amplification section (`report["amplification"][<reference>]`, bias-amplification paper 3.3):
per reference a summary table (mean amplification per template and their average, t-tests,
correlations), the identities excluded for a change of direction and those not covered, and the
per-identity figures; amplification.csv (per identity and template) and amplification_summary.csv."""
from __future__ import annotations

from typing import Any

from metrics.extract.data import CampaignFacts

from .registry import SectionRenderer, Table, register


def _summary(name: str, scope: str, mean: Any, ci: Any, method: Any, n_kept: Any, ttest: dict[str, Any],
             corr: dict[str, Any]) -> dict[str, Any]:
    ci = ci or [None, None]
    return {"reference": name, "template": scope, "mean": mean, "ci": ci, "ci_method": method, "n_kept": n_kept,
            "t": ttest.get("t"), "p_value": ttest.get("p_value"), "df": ttest.get("df"),
            "pearson": corr.get("pearson"), "spearman": corr.get("spearman"), "n_corr": corr.get("n")}


def amplification_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per reference: its facts, `summary` rows (each template, then "average"), `excluded`
    (template, identity, reason) and `identities` (identity, reference %F, per template generated %F
    and amplification)."""
    out = []
    for name, ref in section.items():
        templates = ref.get("templates", {})
        summary = [_summary(name, t, b["mean"], b.get("mean_ci"), b.get("mean_ci_method"), b["n_kept"], b["ttest"],
                            b["correlation"]) for t, b in templates.items()]
        summary.append(_summary(name, "average", ref.get("average"), ref.get("average_ci"),
                                ref.get("average_ci_method"), None, ref.get("ttest", {}), ref.get("correlation", {})))
        identities = sorted({i for b in templates.values() for i in b["rows"]})
        per_identity = []
        for ident in identities:
            cells = [templates[t]["rows"].get(ident, {}) for t in templates]
            ref_pf = next((c["reference"] for c in cells if c), None)
            per_identity.append({"identity": ident, "reference": ref_pf,
                                 "cells": [(c.get("generated"), c.get("amplification"), c.get("excluded"))
                                           for c in cells]})
        out.append({"name": name, "source": ref.get("source"), "setting": ref.get("setting"),
                    "treatment": ref.get("treatment"), "label_source": ref.get("label_source"),
                    "templates": list(templates), "summary": summary,
                    "excluded": [(t, i, r) for t, b in templates.items() for i, r in sorted(b["excluded"].items())],
                    "uncovered": ref.get("uncovered", []), "not_in_design": ref.get("not_in_design", []),
                    "identities": per_identity})
    return out


SUMMARY_HEADER = ["reference", "template", "n_kept", "mean_amplification", "ci_low", "ci_high", "ci_method",
                  "ttest_t", "ttest_p_value", "ttest_df", "pearson", "spearman", "correlation_n"]
DETAIL_HEADER = ["reference", "source", "template", "identity", "generated_percent_female",
                 "reference_percent_female", "skew", "amplification", "excluded"]


def amplification_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    detail, summary = [], []
    for r in amplification_rows(section):
        for s in r["summary"]:
            summary.append([s["reference"], s["template"], s["n_kept"], s["mean"], s["ci"][0], s["ci"][1],
                            s["ci_method"], s["t"], s["p_value"], s["df"], s["pearson"], s["spearman"], s["n_corr"]])
        ref = section[r["name"]]
        for t, b in ref["templates"].items():
            for ident, row in sorted(b["rows"].items()):
                detail.append([r["name"], r["source"], t, ident, row["generated"], row["reference"], row["skew"],
                               row["amplification"], row["excluded"] or ""])
            for ident in b.get("missing", []):
                detail.append([r["name"], r["source"], t, ident, None, ref_value(ref, ident), None, None,
                               "no generated value"])
        for ident in ref.get("uncovered", []):
            detail.append([r["name"], r["source"], "", ident, None, None, None, None, "not covered by the reference"])
    return [Table("amplification.csv", DETAIL_HEADER, detail), Table("amplification_summary.csv", SUMMARY_HEADER, summary)]


def ref_value(ref: dict[str, Any], identity: str) -> Any:
    for b in ref.get("templates", {}).values():
        if identity in b["rows"]:
            return b["rows"][identity]["reference"]
    return None


AMPLIFICATION = register(SectionRenderer(key="amplification", order=25, template="metrics/sections/amplification.html",
                                         rows=amplification_rows, tables=amplification_tables))
