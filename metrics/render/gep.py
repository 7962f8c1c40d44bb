"""The GEP section: score per setting with its interval (HTML table), gep_frequencies.csv and
gep_context.csv, the GEP vector chart (GEP Fig. 2)."""
from __future__ import annotations

from typing import Any

from campaigns.spec import GEP_SETTINGS
from metrics.extract.data import CampaignFacts

from . import charts
from .registry import SectionRenderer, Table, register

SETTINGS = GEP_SETTINGS


def gep_rows(section: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per setting of the GEP table."""
    if not section:
        return []
    return [{"setting": s, "score": section[s]["score"], "ci": section[s].get("score_ci"),
             "ci_method": section[s].get("score_ci_method"), "by_template": section[s].get("by_template"),
             "template_mean": section[s].get("template_mean"),
             "images": section[s]["images"], "ties": section[s]["ties"]}
            for s in SETTINGS if s in section]


def gep_frequency_rows(section: dict[str, Any]) -> list[list[Any]]:
    """gep_frequencies.csv: one row per setting, gender and attribute."""
    rows = []
    for setting in SETTINGS:
        sec = section.get(setting)
        if not sec:
            continue
        for gender, row in sec["frequencies"].items():
            for attribute, f in row.items():
                c = sec["counts"][gender][attribute]
                ci = sec.get("vector_ci", {}).get(attribute, [None, None])
                f_ci = sec.get("frequencies_ci", {}).get(gender, {}).get(attribute, [None, None])
                rows.append([setting, gender, attribute, f, c["present"], c["total"], c["ties"],
                             sec["vector"].get(attribute), ci[0], ci[1], sec.get("vector_ci_method"), f_ci[0], f_ci[1],
                             sec.get("frequencies_ci_method")])
    return rows


def gep_context_rows(section: dict[str, Any]) -> list[list[Any]]:
    """gep_context.csv: the GEP score of each context per setting."""
    return [[setting, context, score] for setting in SETTINGS if section.get(setting)
            for context, score in section[setting]["by_context"].items()]


def gep_template_rows(section: dict[str, Any]) -> list[list[Any]]:
    """gep_template.csv: per setting with several templates, per template ("mean" = averaged over the
    templates) the GEP score (attribute "") and each vector component."""
    rows = []
    for setting in SETTINGS:
        sec = section.get(setting) or {}
        for t, b in (sec.get("by_template") or {}).items():
            ci = b.get("score_ci") or [None, None]
            rows.append([setting, t, "", b["score"], ci[0], ci[1], b.get("score_ci_method")])
            for attribute, v in b["vector"].items():
                vci = (b.get("vector_ci") or {}).get(attribute, [None, None])
                rows.append([setting, t, attribute, v, vci[0], vci[1], b.get("vector_ci_method")])
        mean = sec.get("template_mean")
        if mean:
            rows.append([setting, "mean", "", mean["score"], None, None, None])
            rows += [[setting, "mean", a, v, None, None, None] for a, v in mean["vector"].items()]
    return rows


def gep_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    extra = []
    template_rows = gep_template_rows(section)
    if template_rows:
        extra.append(Table("gep_template.csv", ["setting", "template", "attribute", "value", "ci_low", "ci_high",
                                                "ci_method"], template_rows))
    if section.get("distances"):
        rows = []
        for setting, d in section["distances"].items():
            for gender, r in d.get("rows", {}).items():
                for attribute, v in r["vector"].items():
                    ci = r.get("vector_ci", {}).get(attribute, [None, None])
                    sci = r.get("score_ci", [None, None])
                    rows.append([setting, d["baseline"], gender, r["score"], sci[0], sci[1], r.get("score_ci_method"),
                                 attribute, v, ci[0], ci[1], r.get("vector_ci_method")])
        extra.append(Table("gep_distances.csv", ["setting", "baseline_gender", "gender", "distance", "distance_ci_low",
                                                 "distance_ci_high", "distance_ci_method", "attribute",
                                                 "difference_from_baseline", "difference_ci_low", "difference_ci_high",
                                                 "difference_ci_method"], rows))
    return [Table("gep_frequencies.csv", ["setting", "gender", "attribute", "frequency", "present", "total", "ties",
                                          "gep_vector", "gep_vector_ci_low", "gep_vector_ci_high", "gep_vector_ci_method",
                                          "frequency_ci_low", "frequency_ci_high", "frequency_ci_method"],
                  gep_frequency_rows(section)),
            Table("gep_context.csv", ["setting", "context", "gep_score"], gep_context_rows(section)), *extra]


def gep_charts(section: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for setting in SETTINGS:
        sec = section.get(setting)
        if sec:
            out.append((f"GEP vector, {setting} (GEP Fig. 2, symmetric log scale)",
                        charts.gep_vector_chart(sec, setting, section.get("vector_definition", ""))))
    return out


GEP = register(SectionRenderer(key="gep", order=30, template="metrics/sections/gep.html", rows=gep_rows,
                               tables=gep_tables, charts=gep_charts))
