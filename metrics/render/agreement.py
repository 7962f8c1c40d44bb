"""The agreement section: Fleiss' kappa, Krippendorff's alpha and percent agreement, overall and per
setting (HTML table, agreement.csv)."""
from __future__ import annotations

from typing import Any

from metrics.extract.data import CampaignFacts

from .registry import SectionRenderer, Table, register


def agreement_rows(section: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(scope, figures) rows: overall first, then each setting."""
    return [("overall", section["overall"]), *section["by_setting"].items()]


SUBSETS = (("by_identity", "identity"), ("by_attribute", "attribute"))


def agreement_subset_rows(section: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, name, figures) per PST identity or GEP attribute."""
    return [(kind, name, b) for key, kind in SUBSETS for name, b in sorted(section.get(key, {}).items())]


def agreement_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    header = ["fleiss_kappa", "krippendorff_alpha", "percent_agreement", "questions", "answers", "fleiss_items_used"]
    rows = [[scope, *(b[h] for h in header)] for scope, b in agreement_rows(section)]
    tables = [Table("agreement.csv", ["scope", *header], rows)]
    subsets = agreement_subset_rows(section)
    if subsets:
        tables.append(Table("agreement_subsets.csv", ["subset", "name", *header],
                            [[kind, name, *(b[h] for h in header)] for kind, name, b in subsets]))
    return tables


AGREEMENT = register(SectionRenderer(key="agreement", order=10, template="metrics/sections/agreement.html",
                                     rows=agreement_rows, tables=agreement_tables))
