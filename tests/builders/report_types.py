"""Keys a built report writes that its TypedDicts (metrics/sections/types.py) do not name. The JSON
Schema leaves a section open (a per-setting key is allowed), so a builder writing a new key passes
the schema check; this names it, so the TypedDict (and then the schema, by test_report_types) gains it."""
from __future__ import annotations

from typing import Any

from campaigns.spec import GEP_SETTINGS, PST_SETTINGS
from metrics.sections.types import TYPED_SECTIONS, AgreementBasis, AgreementFigures, GepSetting, PstSetting


def _extra(path: str, block: Any, typed: Any) -> list[str]:
    return [f"{path}.{k}" for k in sorted(set(block) - set(typed.__annotations__))] if isinstance(block, dict) else []


def untyped_keys(report: dict[str, Any]) -> list[str]:
    """Every `section.key` of `report` missing from its TypedDict (nested setting and agreement blocks too)."""
    out: list[str] = []
    for name, typed in TYPED_SECTIONS.items():
        if name in report:
            out += _extra(name, report[name], typed)
    for setting in PST_SETTINGS:
        out += _extra(f"pst.{setting}", report.get("pst", {}).get(setting), PstSetting)
    for setting in GEP_SETTINGS:
        out += _extra(f"gep.{setting}", report.get("gep", {}).get(setting), GepSetting)
    agreement = report.get("agreement", {})
    out += _extra("agreement.overall", agreement.get("overall"), AgreementFigures)
    out += _extra("agreement.basis", agreement.get("basis"), AgreementBasis)
    out += _extra("annotators.agreement_basis", report.get("annotators", {}).get("agreement_basis"), AgreementBasis)
    return out
