"""The report's JSON Schema (issue 21, typed contracts): the top level and each section's own keys.

Published at `GET /api/schema/report/` and in docs/metrics.md; every report built in the tests is
validated against it (`report_validate`, called by `metrics.snapshots.report.report_build` when the
setting `REPORT_SCHEMA_CHECK` is on, as it is in config/settings/test.py). The top level is closed
(`additionalProperties: false`): a new report section is added here, with its keys, or the tests
fail. Inside a section the schema names the keys every report has (required) and those it may have
(documented, optional); the figures' inner shapes are described in docs/metrics.md. Figures are
numbers or null (null when undefined, e.g. no counted person); intervals are [lo, hi] pairs.

Pure data: no Django. `jsonschema` (Draft 2020-12) validates.
"""
from __future__ import annotations

from typing import Any

from campaigns.spec import KINDS

SCHEMA_ID = "/api/schema/report/"
NUMBER = {"type": ["number", "null"]}
INTERVAL = {"type": ["array", "null"], "items": NUMBER, "minItems": 2, "maxItems": 2}
OBJECT = {"type": "object"}
STRINGS = {"type": "array", "items": {"type": "string"}}


def _section(description: str, required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """An object section: `required` keys always present, `optional` ones documented; others allowed
    (a per-setting or per-identity key, e.g. `gep.<setting>`)."""
    return {"type": "object", "description": description, "required": sorted(required),
            "properties": {**required, **(optional or {})}}


AGREEMENT_FIGURES = _section(
    "Inter-annotator agreement over a set of questions.",
    {"krippendorff_alpha": NUMBER, "fleiss_kappa": NUMBER, "percent_agreement": NUMBER,
     "questions": {"type": "integer"}, "answers": {"type": "integer"}},
    {"fleiss_items_used": {"type": "integer"}, "fleiss_raters_per_item": {"type": ["integer", "null"]},
     "note": {"type": ["string", "null"]}, "krippendorff_alpha_ci": INTERVAL})

PST_SETTING = _section(
    "STS of one PST setting (single, paired, intervention), in percent (-100..100).",
    {"overall": NUMBER, "persons": {"type": "integer"}, "images": {"type": "integer"}},
    {"treatment": {"type": "string"}, "overall_ci": INTERVAL, "overall_ci_method": {"type": "string"},
     "micro": OBJECT, "micro_ci": OBJECT, "micro_ci_method": {"type": "string"},
     "groups": OBJECT, "groups_ci": OBJECT, "groups_ci_method": {"type": "string"},
     "percent_feminine": OBJECT, "percent_feminine_ci": OBJECT, "percent_feminine_ci_method": {"type": "string"},
     "counts": OBJECT, "runs": {"type": "array", "items": NUMBER}, "run_ids": {"type": "array"},
     "runs_persons": {"type": "array"}, "runs_ci": {"type": "array", "items": INTERVAL},
     "runs_ci_method": {"type": "string"}, "runs_mean": NUMBER, "runs_mean_ci": INTERVAL,
     "runs_mean_ci_method": {"type": "string"}, "runs_ci_note": {"type": "string"},
     "without_undetermined": OBJECT, "paper_formula": OBJECT, "by_template": OBJECT, "template_mean": OBJECT})

# A hybrid estimate (metrics.core.hybrid): the prediction-powered figure and, beside it, the human-only and
# machine-only figures, each with the interval method it was computed by (issue 22: every figure its method).
HYBRID_PART = _section("The human-only or machine-only figure of a hybrid estimate.",
                       {"estimate": NUMBER, "ci": INTERVAL, "n": {"type": "integer"}, "method": {"type": "string"}})
HYBRID_ESTIMATE = _section(
    "One hybrid (prediction-powered) estimate with its human-only and machine-only counterparts.",
    {"estimate": NUMBER, "ci": INTERVAL, "method": {"type": "string"}, "human_only": HYBRID_PART,
     "machine_only": HYBRID_PART},
    {"lambda": NUMBER, "n_human": {"type": "integer"}, "n_machine": {"type": "integer"},
     "effective_human_labels": NUMBER, "human_labels_saved": NUMBER, "sparse": {"type": "boolean"}})
HYBRID_ESTIMATES = {"type": "object", "additionalProperties": HYBRID_ESTIMATE}
HYBRID_SETTING = {"type": "object", "description": "The hybrid estimates of one setting.", "properties": {
    "score": HYBRID_ESTIMATE, "overall": HYBRID_ESTIMATE, "vector": HYBRID_ESTIMATES, "micro": HYBRID_ESTIMATES,
    "percent_feminine": HYBRID_ESTIMATES, "frequencies": {"type": "object", "additionalProperties": HYBRID_ESTIMATES}}}
HYBRID_LABELLER = {"type": "object", "description": "One labeller's hybrid estimates, one entry per setting.",
                   "properties": {"sample": OBJECT, "methods": OBJECT, "confidence": NUMBER},
                   "additionalProperties": HYBRID_SETTING}

GEP_SETTING = _section(
    "GEP of one setting (neutral, explicit): the score, the attribute vector and the frequencies.",
    {"score": NUMBER, "vector": OBJECT, "frequencies": OBJECT, "images": {"type": "integer"},
     "questions": {"type": "integer"}, "ties": {"type": "integer"}, "unanswered": {"type": "integer"}},
    {"score_ci": INTERVAL, "score_ci_method": {"type": "string"}, "score_ci_extended": {"type": "boolean"},
     "vector_ci": OBJECT, "vector_ci_method": {"type": "string"}, "frequencies_ci": OBJECT,
     "frequencies_ci_method": {"type": "string"}, "counts": OBJECT, "by_context": OBJECT, "by_template": OBJECT,
     "template_mean": OBJECT})

AGREEMENT_BASIS = _section(
    "Which answers the agreement counts (adaptive redundancy: the first `answers_per_question` of each question).",
    {"design": {"enum": ["fixed", "adaptive"]}, "note": {"type": ["string", "null"]}},
    {"answers_per_question": {"type": ["integer", "null"]}, "answers_used": {"type": "integer"},
     "answers_total": {"type": "integer"}})

SECTIONS: dict[str, dict[str, Any]] = {
    "campaign": _section(
        "The campaign the report is of.",
        {"id": {"type": "integer"}, "name": {"type": "string"}, "kind": {"enum": list(KINDS)},
         "status": {"type": "string"}, "backend": {"type": ["string", "null"]}, "model": {"type": ["string", "null"]},
         "synthetic": {"type": "boolean"}}),
    "options": _section(
        "The options the report was built with (metrics.options.ReportOptions), seed resolved.",
        {"treatment": {"enum": ["paper", "excluded"]}, "gep_tie_policy": {"enum": ["absent", "present", "exclude"]},
         "aggregation": {"enum": ["majority", "dawid_skene"]}, "n_boot": {"type": "integer"},
         "n_perm": {"type": "integer"}, "confidence": {"type": "number"}, "seed": {"type": "integer"},
         "exclude_blocked": {"type": "boolean"}},
        {"min_group": {"type": "integer"}, "source": {"type": "string"}}),
    "counts": _section(
        "What the figures rest on: images, questions, answers, annotators, ties.",
        {k: {"type": "integer"} for k in ("images", "questions", "answers", "annotators", "ties",
                                            "questions_labelled")},
        {k: {"type": "integer"} for k in ("images_done", "images_excluded", "images_failed", "images_filtered",
                                            "answers_total", "answers_gold", "answers_excluded_images",
                                            "answers_blocked", "annotators_blocked")}),
    "agreement": _section(
        "Agreement overall, by setting, by identity (PST) or attribute (GEP), and its basis.",
        {"overall": AGREEMENT_FIGURES, "by_setting": {"type": "object", "additionalProperties": AGREEMENT_FIGURES},
         "basis": AGREEMENT_BASIS},
        {"by_identity": {"type": "object", "additionalProperties": AGREEMENT_FIGURES},
         "by_attribute": {"type": "object", "additionalProperties": AGREEMENT_FIGURES}}),
    "pst": _section(
        "Paired Stereotype Test: STS per setting, the paired-minus-single gap, exclusions, gender balance.",
        {"treatment": {"enum": ["paper", "excluded"]}, "excluded": OBJECT, "identity_groups": OBJECT},
        {"single": PST_SETTING, "paired": PST_SETTING, "intervention": PST_SETTING, "gap": OBJECT,
         "gender_balance": OBJECT, "intervention_analysis": OBJECT, "labor_stats_percent_female": OBJECT}),
    "amplification": {"type": "object", "description": "PST bias amplification against each reference %F."},
    "gep": {**_section(
        "Gender Presentation Differences: one entry per setting (neutral, explicit) besides these keys.",
        {"tie_policy": {"enum": ["absent", "present", "exclude"]}, "genders": STRINGS,
         "vector_definition": {"type": "string"}, "genders_in_vector": STRINGS},
        {"baseline_gender": {"type": "string"}, "distances": OBJECT, "neutral": GEP_SETTING, "explicit": GEP_SETTING})},
    "annotators": _section(
        "Who labelled: the figures per self-reported demographic group and their differences.",
        {"min_group": {"type": "integer"}, "annotators": {"type": "integer"}, "reported": {"type": "integer"},
         "metrics": STRINGS, "fields": OBJECT},
        {"labels": {"type": "string"}, "null": {"type": "string"}, "release": {"type": ["object", "null"]},
         "note": {"type": "string"}, "agreement_basis": AGREEMENT_BASIS}),
    "redundancy": _section(
        "Adaptive redundancy: answers spent against the fixed-R design.",
        {"rule": {}, "questions": {"type": "integer"}, "answers": {"type": "integer"}},
        {"fixed_r": {}, "fixed_r_answers": {"type": ["integer", "null"]}, "saved_fraction": NUMBER,
         "by_setting": OBJECT}),
    "source": _section(
        "The label source of a `?source=` report.",
        {"name": {"type": "string"}, "kind": {"enum": ["machine", "hybrid"]}, "labeller": {"type": "string"}},
        {"model": {"type": ["string", "null"]}, "questions_labelled": {"type": "integer"}}),
    "auto": {"type": "object", "description": "Per machine labeller: its agreement with the human majority."},
    "hybrid": {"type": "object", "description": "Per machine labeller: prediction-powered (hybrid) estimates.",
               "additionalProperties": HYBRID_LABELLER},
    "clipscore": {"type": "object", "description": "GEP with a machine source: CLIPScore per setting."},
    "warnings": {"type": "array", "description": "Figures or sections left out or flagged, and why.",
                 "items": {"type": "object", "required": ["path", "message"], "additionalProperties": False,
                           "properties": {"path": {"type": "string"}, "message": {"type": "string"}}}},
    "summary": _section(
        "The report in plain words (metrics/sections/summary.py): lists of sentences.",
        {k: STRINGS for k in ("headline", "comparison", "agreement", "data", "warnings", "lines")}),
}

REQUIRED = ["campaign", "options", "counts", "agreement", "warnings", "summary"]

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "Campaign report",
    "description": ("GET /api/campaigns/{id}/report/ (format=json, 200). `pst` (and `amplification`) in PST "
                    "reports, `gep` in GEP reports; a section that cannot be computed is left out with a "
                    "warning at its path. See docs/metrics.md."),
    "type": "object",
    "required": REQUIRED,
    "additionalProperties": False,
    "properties": SECTIONS,
    "allOf": [
        {"if": {"properties": {"campaign": {"properties": {"kind": {"const": "pst"}}}}},
         "then": {"not": {"required": ["gep"]}}},
        {"if": {"properties": {"campaign": {"properties": {"kind": {"const": "gep"}}}}},
         "then": {"allOf": [{"not": {"required": ["pst"]}}, {"not": {"required": ["amplification"]}}]}},
    ],
}


def report_errors(report: Any) -> list[str]:
    """Every way `report` breaks the schema, as "path: message" (empty: it conforms)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(REPORT_SCHEMA)
    return sorted(f"{'.'.join(map(str, e.absolute_path)) or '<report>'}: {e.message}"
                  for e in validator.iter_errors(report))


def report_validate(report: Any) -> None:
    """Raise ValueError naming every violation when `report` does not conform to REPORT_SCHEMA."""
    errors = report_errors(report)
    if errors:
        raise ValueError("report does not conform to REPORT_SCHEMA:\n" + "\n".join(errors))
