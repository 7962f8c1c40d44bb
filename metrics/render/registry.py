"""Section renderers: how each section of a report becomes HTML, CSV tables and charts.

A report is a dict of sections (`agreement`, `pst`, `gep`, and later e.g. amplification against a
reference baseline, per-template or annotator-group breakdowns, hybrid estimates). Each section has
one `SectionRenderer`, registered here; the HTML pages, the CSV zip and the charts loop over the
registered renderers of the sections the report holds, in `order`. A new section is a module that
builds a `SectionRenderer` and calls `register(...)` (imported from `metrics/render/__init__.py`),
plus its partial template under `templates/metrics/sections/`: nothing central to edit.

Renderers are pure: they read the report dict (and the campaign's facts for CSV tables), never the
database.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from metrics.extract.data import CampaignFacts


@dataclass(frozen=True)
class Table:
    """One CSV file of the zip."""

    name: str
    header: list[str]
    rows: list[list[Any]]


def _no_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    return []


def _no_charts(section: dict[str, Any]) -> list[tuple[str, str]]:
    return []


@dataclass(frozen=True)
class SectionRenderer:
    """How the report section `report[key]` is shown.

    - `template`: HTML partial; it gets `section` (the report's section), `rows` (what `rows` built)
      and `report` (the whole report).
    - `rows`: the public row builder of its HTML tables (section -> rows).
    - `tables`: its CSV tables (section, campaign facts -> tables).
    - `charts`: its figures as (caption, inline SVG) pairs.
    """

    key: str
    order: int
    template: str
    rows: Callable[[dict[str, Any]], Any]
    tables: Callable[[dict[str, Any], CampaignFacts], list[Table]] = field(default=_no_tables)
    charts: Callable[[dict[str, Any]], list[tuple[str, str]]] = field(default=_no_charts)


_REGISTRY: dict[str, SectionRenderer] = {}


def register(renderer: SectionRenderer) -> SectionRenderer:
    """Add a section renderer (one per report key)."""
    if renderer.key in _REGISTRY and _REGISTRY[renderer.key] != renderer:
        raise ValueError(f"a renderer for report section {renderer.key!r} is registered already")
    _REGISTRY[renderer.key] = renderer
    return renderer


def renderers() -> list[SectionRenderer]:
    return sorted(_REGISTRY.values(), key=lambda r: (r.order, r.key))


def sections_of(report: dict[str, Any]) -> list[tuple[SectionRenderer, dict[str, Any]]]:
    """The registered renderers of the sections this report holds, in order, with their sections."""
    return [(r, report[r.key]) for r in renderers() if report.get(r.key)]
