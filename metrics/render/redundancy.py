"""The redundancy section (adaptive redundancy, issue 17): answers spent against the fixed-R design,
overall and per setting (HTML table, redundancy.csv). Present only for campaigns whose
`annotation.redundancy` is adaptive."""
from __future__ import annotations

from typing import Any

from metrics.extract.data import CampaignFacts

from .registry import SectionRenderer, Table, register


def redundancy_rows(section: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(scope, figures) rows: overall first, then each setting."""
    return [("overall", section), *section["by_setting"].items()]


def redundancy_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    rows = [[scope, b["questions"], b["answers"], b["fixed_r_answers"], b["saved_fraction"]]
            for scope, b in redundancy_rows(section)]
    return [Table("redundancy.csv", ["scope", "questions", "answers", f"fixed_r{section['fixed_r']}_answers",
                                     "saved_fraction"], rows)]


REDUNDANCY = register(SectionRenderer(key="redundancy", order=15, template="metrics/sections/redundancy.html",
                                      rows=redundancy_rows, tables=redundancy_tables))
