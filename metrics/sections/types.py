"""Typed shapes of the report's sections (checked by mypy where the report is assembled), the same
keys as its JSON Schema (`metrics/sections/schema.py`; tests/metrics/test_report_types.py holds each
TypedDict's required and optional keys equal to the schema's). A section's inner figures that vary by
design (per identity, per attribute, per setting) stay `dict[str, Any]`, as the schema leaves them
`object`. Pure typing: no Django."""
# No `from __future__ import annotations` here: TypedDict reads NotRequired at run time (the test does).
from typing import Any, Literal, NotRequired, TypedDict

from campaigns.spec.base import GepSettingName as GepSettingName  # re-exported for the section builders
from campaigns.spec.base import PstSettingName as PstSettingName
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
    """`agreement.basis` (and `annotators.agreement_basis`): which answers the agreement counts."""

    design: Literal["fixed", "adaptive"]
    note: str | None
    answers_per_question: NotRequired[int | None]
    answers_used: NotRequired[int]
    answers_total: NotRequired[int]


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


class CountsBlock(TypedDict):
    """`counts`: what the figures rest on (the extraction's counts, plus ties and labelled questions)."""

    images: int
    questions: int
    answers: int
    annotators: int
    ties: int
    questions_labelled: int
    images_done: NotRequired[int]
    images_excluded: NotRequired[int]
    images_failed: NotRequired[int]
    images_filtered: NotRequired[int]
    answers_total: NotRequired[int]
    answers_gold: NotRequired[int]
    answers_excluded_images: NotRequired[int]
    answers_blocked: NotRequired[int]
    annotators_blocked: NotRequired[int]


# The setting names as the keys of `pst` and `gep` are campaigns.spec's PstSettingName / GepSettingName
# (held equal to PST_SETTINGS / GEP_SETTINGS by tests/metrics/test_report_types.py).


class PstRuns(TypedDict):
    """STS per run and their mean (`metric_intervals.pst_runs`); intervals when they could be computed."""

    runs: list[float | None]
    run_ids: list[int]
    runs_persons: list[int]
    runs_mean: float | None
    runs_ci: NotRequired[list[list[float | None]]]
    runs_ci_method: NotRequired[str]
    runs_mean_ci: NotRequired[list[float | None]]
    runs_mean_ci_method: NotRequired[str]
    runs_ci_note: NotRequired[str]


class PstSettingIntervals(TypedDict):
    """The intervals of one PST setting (`metric_intervals.pst_setting_intervals`)."""

    overall_ci: list[float | None]
    overall_ci_method: str
    micro_ci: dict[str, list[float | None]]
    micro_ci_method: str
    groups_ci: dict[str, list[float | None]]
    groups_ci_method: str
    percent_feminine_ci: dict[str, list[float | None]]
    percent_feminine_ci_method: str


class PstSetting(TypedDict):
    """`pst.<setting>`: STS of one setting in percent, its figures per identity and group, intervals, runs."""

    overall: float | None
    persons: int
    images: int
    treatment: NotRequired[Treatment]
    overall_ci: NotRequired[list[float | None]]
    overall_ci_method: NotRequired[str]
    micro: NotRequired[dict[str, float | None]]
    micro_ci: NotRequired[dict[str, list[float | None]]]
    micro_ci_method: NotRequired[str]
    groups: NotRequired[dict[str, float | None]]
    groups_ci: NotRequired[dict[str, list[float | None]]]
    groups_ci_method: NotRequired[str]
    percent_feminine: NotRequired[dict[str, float | None]]
    percent_feminine_ci: NotRequired[dict[str, list[float | None]]]
    percent_feminine_ci_method: NotRequired[str]
    counts: NotRequired[dict[str, Any]]
    runs: NotRequired[list[float | None]]
    run_ids: NotRequired[list[int]]
    runs_persons: NotRequired[list[int]]
    runs_ci: NotRequired[list[list[float | None]]]
    runs_ci_method: NotRequired[str]
    runs_ci_note: NotRequired[str]
    runs_mean: NotRequired[float | None]
    runs_mean_ci: NotRequired[list[float | None]]
    runs_mean_ci_method: NotRequired[str]
    without_undetermined: NotRequired[dict[str, Any]]
    paper_formula: NotRequired[dict[str, Any]]
    by_template: NotRequired[dict[str, dict[str, Any]]]
    template_mean: NotRequired[dict[str, Any]]


class PstBlock(TypedDict):
    """`pst`: STS per setting, the paired-minus-single gap, exclusions, gender balance."""

    treatment: Treatment
    excluded: dict[str, Any]
    identity_groups: dict[str, str]
    single: NotRequired[PstSetting]
    paired: NotRequired[PstSetting]
    intervention: NotRequired[PstSetting]
    gap: NotRequired[dict[str, Any]]
    gender_balance: NotRequired[dict[str, Any]]
    intervention_analysis: NotRequired[dict[str, Any]]
    labor_stats_percent_female: NotRequired[dict[str, float | None]]


class GepSettingIntervals(TypedDict):
    """The intervals of one GEP setting (`metric_intervals.gep_setting_intervals`)."""

    score_ci: list[float | None]
    score_ci_method: str
    score_ci_extended: bool
    vector_ci: dict[str, list[float | None]]
    vector_ci_method: str
    frequencies_ci: dict[str, dict[str, list[float | None]]]
    frequencies_ci_method: str


class GepSetting(TypedDict):
    """`gep.<setting>`: the score, the attribute vector and the frequencies of one setting, intervals."""

    score: float | None
    vector: dict[str, float | None]
    frequencies: dict[str, dict[str, float | None]]
    images: int
    questions: int
    ties: int
    unanswered: int
    score_ci: NotRequired[list[float | None]]
    score_ci_method: NotRequired[str]
    score_ci_extended: NotRequired[bool]
    vector_ci: NotRequired[dict[str, list[float | None]]]
    vector_ci_method: NotRequired[str]
    frequencies_ci: NotRequired[dict[str, dict[str, list[float | None]]]]
    frequencies_ci_method: NotRequired[str]
    counts: NotRequired[dict[str, Any]]
    by_context: NotRequired[dict[str, float | None]]
    by_template: NotRequired[dict[str, dict[str, Any]]]
    template_mean: NotRequired[dict[str, Any]]


class GepBlock(TypedDict):
    """`gep`: one entry per setting (neutral, explicit), distances from a baseline gender when more than two."""

    tie_policy: GepTiePolicy
    genders: list[str]
    vector_definition: str
    genders_in_vector: list[str]
    baseline_gender: NotRequired[str]
    distances: NotRequired[dict[str, Any]]
    neutral: NotRequired[GepSetting]
    explicit: NotRequired[GepSetting]


class AnnotatorsBlock(TypedDict):
    """`annotators`: the figures per self-reported demographic group (from a demographics release)."""

    min_group: int
    annotators: int
    reported: int
    metrics: list[str]
    fields: dict[str, Any]
    release: NotRequired[dict[str, Any] | None]
    labels: NotRequired[str]
    null: NotRequired[str]
    note: NotRequired[str]
    agreement_basis: NotRequired[AgreementBasis]


class RedundancyBlock(TypedDict):
    """`redundancy`: answers spent against the fixed-R design (annotation.redundancy.redundancy_summary)."""

    rule: Any  # the spec's redundancy: a fixed R or the adaptive object
    questions: int
    answers: int
    fixed_r: NotRequired[int]
    fixed_r_answers: NotRequired[int | None]
    saved_fraction: NotRequired[float | None]
    by_setting: NotRequired[dict[str, Any]]


# The sections typed here, by their key in the report (the test compares each with the schema). The
# others (`amplification`, `auto`, `hybrid`, `clipscore`) are `object` in the schema, keyed by
# reference, labeller or setting: no fixed keys to type.
TYPED_SECTIONS: dict[str, Any] = {"campaign": CampaignBlock, "options": OptionsBlock, "counts": CountsBlock,
                                  "agreement": AgreementBlock, "pst": PstBlock, "gep": GepBlock,
                                  "annotators": AnnotatorsBlock, "redundancy": RedundancyBlock,
                                  "source": SourceBlock, "summary": SummaryBlock}
