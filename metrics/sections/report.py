"""The campaign report: agreement, PST (STS) or GEP figures with bootstrap intervals, assembled from the
section modules (`labels`, `agreement`, `pst`, `gep`, the registered further sections).

Built from `CampaignData` arrays only (no database: the extraction read everything before) by the pure functions of `metrics.core`. Conventions:
- STS in percent (-100..100), GEP frequencies/vectors/scores as fractions; every figure a float
  (NaN becomes null in JSON).
- Every headline figure `<key>` has `<key>_ci` = [low, high] and `<key>_ci_method`: the method
  suited to the statistic (`metrics/sections/metric_intervals.py`: BCa over images for STS and their
  differences, Wilson with the design effect for shares of persons, test inversion for the GEP
  score, Newcombe for GEP components), seeded, 1,000 draws by default; every interval holds its
  estimate.
- Labels per question: majority vote of its effective answers (ties kept as "tie" and counted), or
  Dawid-Skene (`aggregation="dawid_skene"`).
- PST: `treatment="paper"` counts "Cannot identify" and ties as -1 (the paper's formula);
  `"excluded"` drops them. Both are always computed: the other one is under `without_undetermined`
  (or `paper_formula`), and `pst.excluded` counts them.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np

from campaigns.spec import PST
from metrics.core.draws import shared_draws
from metrics.core.report_warnings import collecting, warn
from metrics.extract.data import CampaignData
from metrics.options import AGGREGATIONS, GEP_TIE_POLICIES, TREATMENTS, ReportOptions

from .agreement import agreement_data, agreement_section
from .agreement_subsets import agreement_subsets
from .amplification import amplification_section
from .gep import gep_section
from .guard import guarded
from .labels import LabelTable, label_table, question_labels
from .pst import pst_section
from .types import AgreementBlock, CampaignBlock, CountsBlock, OptionsBlock, RedundancyBlock
from .values import num as _f

# The names other modules import from here (the sections' own modules are the owners).
__all__ = ["AGGREGATIONS", "GEP_TIE_POLICIES", "TREATMENTS", "LabelTable", "ReportOptions", "_f",
           "agreement_data", "agreement_section", "gep_section", "guarded", "label_table", "pst_section", "question_labels",
           "register_section", "report_from_data", "report_seed"]


# ------------------------------------------------------------------------------ further sections
# A section beyond agreement and the kind's own (e.g. `annotators`, metrics/sections/annotators.py) is a module
# that registers its builder here: (data, labels, ties, options, seed) -> the section, or None to leave
# it out. metrics/apps.py imports those modules; its renderer registers with metrics.render.registry.
SectionBuilder = Callable[[CampaignData, np.ndarray, np.ndarray, ReportOptions, int], "Mapping[str, Any] | None"]
_SECTION_BUILDERS: dict[str, SectionBuilder] = {}


def register_section(key: str, builder: SectionBuilder) -> SectionBuilder:
    """Add a report section builder (one per report key; computed in registration order)."""
    if _SECTION_BUILDERS.get(key, builder) is not builder:
        raise ValueError(f"a builder for report section {key!r} is registered already")
    _SECTION_BUILDERS[key] = builder
    return builder


# ------------------------------------------------------------------------------ whole report
def report_seed(data: CampaignData, options: ReportOptions) -> int:
    return options.seed if options.seed is not None else int(data.campaign.seed) & 0x7FFFFFFF


def report_from_data(data: CampaignData, options: ReportOptions,
                     labels: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    """The report of the data; `labels` (label per question, is_tie per question) replaces the human
    majority (a machine labeller's labels for `?source=<labeller>`, metrics/sections/sources.py)."""
    with collecting() as log, shared_draws():  # the same images resampled by many sections: drawn once
        report = _report_sections(data, options, labels)
    # Figures or sections left out or flagged, and why (metrics/core/report_warnings.py).
    report["warnings"] = log.as_list()
    return report


def _report_sections(data: CampaignData, options: ReportOptions,
                     given: tuple[np.ndarray, np.ndarray] | None) -> dict[str, Any]:
    campaign = data.campaign
    seed = report_seed(data, options)
    labels, ties = question_labels(data, options) if given is None else given
    backend = campaign.spec.get("backend") or {}
    campaign_block: CampaignBlock = {
        "id": campaign.pk, "name": campaign.name, "kind": campaign.kind, "status": campaign.status,
        "backend": backend.get("name"), "model": backend.get("model"), "synthetic": backend.get("name") == "placeholder"}
    # The options (dataclasses.asdict) and the extraction's counts are plain dicts: cast to their sections' types.
    options_block = cast(OptionsBlock, {**options.to_dict(), "seed": seed})
    counts_block = cast(CountsBlock, {**data.counts, "ties": int(ties.sum()),
                                      "questions_labelled": int((labels != "").sum())})
    report: dict[str, Any] = {
        "campaign": campaign_block,
        "options": options_block,
        "counts": counts_block,
        "agreement": _agreement_block(data),
    }
    if campaign.kind == PST:
        pst_part = guarded("pst", lambda: pst_section(data, labels, ties, options, seed))
        if pst_part is not None:
            report["pst"] = pst_part
        amplification = guarded("amplification", lambda: amplification_section(
            data, labels, label_source=f"human answers ({options.aggregation})", n_boot=options.n_boot,
            confidence=options.confidence, seed=seed))
        if amplification:
            report["amplification"] = amplification
    else:
        gep_part = guarded("gep", lambda: gep_section(data, labels, ties, options, seed))
        if gep_part is not None:
            report["gep"] = gep_part
    if data.redundancy is not None:  # adaptive redundancy: what it spent (read by the extraction)
        # annotation.redundancy.redundancy_summary's block (annotation cannot import metrics' types)
        report["redundancy"] = cast(RedundancyBlock, data.redundancy)
    for key, build in _SECTION_BUILDERS.items():
        section = guarded(key, lambda build=build: build(data, labels, ties, options, seed))  # type: ignore[misc]
        if section is not None:
            report[key] = section
    return report


def _agreement_block(data: CampaignData) -> AgreementBlock:
    sub, basis = agreement_data(data)
    if basis["note"]:
        warn("agreement", basis["note"])
    return cast(AgreementBlock, {**agreement_section(sub), **agreement_subsets(sub), "basis": basis})
