"""Reads about who labelled: an annotator's own demographics state for a campaign's form, and what a
researcher may see of them (group counts; individual answers only where the campaign's spec says
`researcher_access: "individual"` and the annotator consented to that campaign's text). Reads only."""
from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Subquery

from campaigns.models import Campaign

from .demographics import FIELDS, choices, effective_answers, group_of, merge_small_groups
from .models import Annotator, DemographicsResponse, Enrollment
from .spec_section import annotation_settings

DEFAULT_MIN_GROUP = 5


def demographics_form(*, campaign: Campaign, annotator: Annotator) -> dict[str, Any]:
    """GET /api/campaigns/{id}/demographics/ for an annotator: the campaign's settings, the form's
    choices and their own current answers (null when none)."""
    cfg = annotation_settings(campaign)["demographics"]
    row = DemographicsResponse.objects.filter(campaign=campaign, annotator=annotator).first()
    return {
        "ask": cfg["ask"], "fields": cfg["fields"], "consent_version": cfg["consent_version"],
        "consent_text": cfg["consent_text"], "researcher_access": cfg["researcher_access"],
        "choices": {k: v for k, v in choices().items() if k in cfg["fields"]},
        "response": None if row is None else {
            "answers": row.answers, "consent_version": row.consent_version, "consented_at": row.consented_at,
            "withdrawn_at": row.withdrawn_at},
    }


def campaign_demographics_rows(*, campaign_id: int) -> list[tuple[int, dict[str, Any], dict[str, Any], str]]:
    """(annotator id, campaign answers, profile answers, consent version) of every annotator enrolled in
    the campaign: one query (the report's extraction reads the same)."""
    response = DemographicsResponse.objects.filter(campaign_id=campaign_id, annotator_id=OuterRef("annotator_id"))
    rows = (Enrollment.objects.filter(campaign_id=campaign_id)
            .annotate(resp=Subquery(response.values("answers")[:1]),
                      version=Subquery(response.values("consent_version")[:1]))
            .order_by("annotator_id").values_list("annotator_id", "resp", "annotator__demographics", "version"))
    return [(a, r or {}, p or {}, v or "") for a, r, p, v in rows]


def demographics_summary(*, campaign: Campaign, min_group: int = DEFAULT_MIN_GROUP) -> dict[str, Any]:
    """GET /api/campaigns/{id}/demographics/ for the researcher: per field, annotators per group (groups
    under `min_group` merged into `other`; an `other` still under it is null); plus `individual` rows
    only when the spec says `researcher_access: "individual"`, and then only of annotators who answered
    the campaign's own form under its current consent version (never the profile's answers)."""
    cfg = annotation_settings(campaign)["demographics"]
    rows = campaign_demographics_rows(campaign_id=campaign.pk)
    answers = {a: effective_answers(r, p) for a, r, p, _ in rows}
    groups: dict[str, Any] = {}
    for field in FIELDS:
        _, counts = merge_small_groups({a: group_of(v, field) for a, v in answers.items()}, min_group)
        groups[field] = counts
    out: dict[str, Any] = {
        "ask": cfg["ask"], "fields": cfg["fields"], "researcher_access": cfg["researcher_access"],
        "consent_version": cfg["consent_version"], "min_group": min_group, "annotators": len(rows),
        "reported": sum(1 for v in answers.values() if v), "groups": groups,
    }
    if cfg["researcher_access"] == "individual":
        out["individual"] = [{"annotator": a, "answers": r, "consent_version": v}
                             for a, r, _, v in rows if r and v == cfg["consent_version"]]
    return out
