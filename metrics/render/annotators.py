"""The annotators section: annotators per demographic group (small groups merged, an "other" under the
minimum suppressed), each group's headline figures and agreement with intervals, and the permutation
tests between groups (HTML tables, annotator_groups.csv and annotator_group_tests.csv)."""
from __future__ import annotations

from typing import Any

from metrics.extract.data import CampaignFacts

from .registry import SectionRenderer, Table, register

FIELD_LABELS = {"gender": "gender", "age_band": "age band", "country": "country"}


def _ci(ci: Any) -> tuple[Any, Any]:
    return (ci[0], ci[1]) if isinstance(ci, list) and len(ci) == 2 else (None, None)


def annotator_group_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (field, group, metric): the group's size, the metric's value and interval (a group
    of everyone, or a suppressed one, has a row without figures)."""
    rows = []
    for field, entry in section["fields"].items():
        for group, g in entry["groups"].items():
            base = {"field": field, "field_label": FIELD_LABELS.get(field, field), "group": group,
                    "annotators": g["annotators"], "answers": g.get("answers"), "suppressed": g.get("suppressed", False)}
            if "headline" not in g:
                rows.append({**base, "metric": None, "value": None, "ci": (None, None)})
                continue
            for metric, fig in g["headline"].items():
                rows.append({**base, "metric": metric, "value": fig["value"], "ci": _ci(fig["ci"])})
            agreement = g["agreement"]
            rows.append({**base, "metric": "krippendorff_alpha", "value": agreement["krippendorff_alpha"],
                         "ci": _ci(agreement.get("krippendorff_alpha_ci"))})
            rows.append({**base, "metric": "fleiss_kappa", "value": agreement["fleiss_kappa"], "ci": (None, None)})
    return rows


def annotator_test_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"field": field, **t} for field, entry in section["fields"].items() for t in entry["tests"]]


def annotators_rows(section: dict[str, Any]) -> dict[str, Any]:
    return {"groups": annotator_group_rows(section), "tests": annotator_test_rows(section)}


def annotators_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    groups = [[r["field"], r["group"], r["annotators"], r["answers"], r["metric"], r["value"], r["ci"][0], r["ci"][1]]
              for r in annotator_group_rows(section)]
    tests = [[t["field"], t["a"], t["b"], t["metric"], t["value_a"], t["value_b"], t["difference"], t["p_value"],
              t.get("p_holm"), t["n_perm"]] for t in annotator_test_rows(section)]
    return [Table("annotator_groups.csv", ["field", "group", "annotators", "answers", "metric", "value", "ci_low",
                                           "ci_high"], groups),
            Table("annotator_group_tests.csv", ["field", "group_a", "group_b", "metric", "value_a", "value_b",
                                                "difference", "p_value", "p_holm", "n_perm"], tests)]


ANNOTATORS = register(SectionRenderer(key="annotators", order=60, template="metrics/sections/annotators.html",
                                      rows=annotators_rows, tables=annotators_tables))
