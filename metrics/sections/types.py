"""Typed shapes of the report's sections (checked by mypy where the report is assembled), the same
keys as its JSON Schema (`metrics/sections/schema.py`; tests/metrics/test_report_types.py holds each
TypedDict's required and optional keys equal to the schema's). A section's inner figures that vary by
design (per identity, per attribute, per setting) stay `dict[str, Any]`, as the schema leaves them
`object`. Pure typing: no Django."""
# No `from __future__ import annotations` here: TypedDict reads NotRequired at run time (the test does).
from typing import Any, Literal, NotRequired, TypedDict

from metrics.core.gep import GepTiePolicy
from metrics.core.pst import Treatment

Interval = list[float | None] | None


class CampaignBlock(TypedDict):
    """`campaign`: the campaign the report is of."""

    id: int
    name: str
    kind: str
    status: str
    backend: str | None
    model: str | None
    synthetic: bool


class OptionsBlock(TypedDict):
    """`options`: the options the report was built with, seed resolved."""

    treatment: Treatment
    gep_tie_policy: GepTiePolicy
    aggregation: str
    n_boot: int
    n_perm: int
    confidence: float
    seed: int
    exclude_blocked: bool
    min_group: NotRequired[int]
    source: NotRequired[str]


class AgreementFigures(TypedDict):
    """Inter-annotator agreement over a set of questions."""

    krippendorff_alpha: float | None
    fleiss_kappa: float | None
    percent_agreement: float | None
    questions: int
    answers: int
    fleiss_items_used: NotRequired[int]
    fleiss_raters_per_item: NotRequired[int | None]
    note: NotRequired[str | None]
    krippendorff_alpha_ci: NotRequired[Interval]


class AgreementBasis(TypedDict):
    design: Literal["fixed", "adaptive"]
    note: str | None


class AgreementBlock(TypedDict):
    """`agreement`: overall, by setting, by identity (PST) or attribute (GEP), and its basis."""

    overall: AgreementFigures
    by_setting: dict[str, AgreementFigures]
    basis: AgreementBasis
    by_identity: NotRequired[dict[str, AgreementFigures]]
    by_attribute: NotRequired[dict[str, AgreementFigures]]


class SourceBlock(TypedDict):
    """`source`: the label source of a `?source=` report."""

    name: str
    kind: Literal["machine", "hybrid"]
    labeller: str
    model: NotRequired[str | None]
    questions_labelled: NotRequired[int]


class SummaryBlock(TypedDict):
    """`summary`: the report in plain words, lists of sentences."""

    headline: list[str]
    comparison: list[str]
    agreement: list[str]
    data: list[str]
    warnings: list[str]
    lines: list[str]


class ReportWarning(TypedDict):
    path: str
    message: str


# The sections typed here, by their key in the report (the test compares each with the schema).
TYPED_SECTIONS: dict[str, Any] = {"campaign": CampaignBlock, "options": OptionsBlock, "agreement": AgreementBlock,
                                  "source": SourceBlock, "summary": SummaryBlock}
