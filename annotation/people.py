"""Reads about who labelled: an annotator's own demographics state for a campaign's form, and what a
researcher may see of them (group counts from numbered releases only, under the release rule of
docs/security.md; individual answers only where the campaign's spec says `researcher_access:
"individual"` and the annotator consented to that campaign's text). Reads only."""
from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Q, Subquery

from campaigns.models import Campaign

from .demographics import DEFAULT_MIN_GROUP, FIELDS, choices, effective_answers, group_of, release_counts
from .models import Annotator, DemographicsRelease, DemographicsResponse, Enrollment
from .spec_section import annotation_settings

__all__ = ["DEFAULT_MIN_GROUP", "demographics_form", "demographics_summary", "release_answers", "release_sizes"]


def demographics_form(*, campaign: Campaign, annotator: Annotator) -> dict[str, Any]:
    """GET /api/campaigns/{id}/demographics/ for an annotator: the campaign's settings, the form's
    choices and their own current answers (null when none, and always null for a crowd-link account:
    `response_hidden`)."""
    cfg = annotation_settings(campaign)["demographics"]
    # A crowd-link account is whoever opened the link with that id (an unverified claim): it may
    # answer, and replace or withdraw its answers, but never reads back what is stored for the id.
    hidden = annotator.is_link_account
    row = None if hidden else DemographicsResponse.objects.filter(campaign=campaign, annotator=annotator).first()
    return {"response_hidden": hidden,
        "ask": cfg["ask"], "fields": cfg["fields"], "consent_version": cfg["consent_version"],
        "consent_text": cfg["consent_text"], "researcher_access": cfg["researcher_access"],
        "choices": {k: v for k, v in choices().items() if k in cfg["fields"]},
        "response": None if row is None else {
            "answers": row.answers, "consent_version": row.consent_version, "consented_at": row.consented_at,
            "withdrawn_at": row.withdrawn_at},
    }


def campaign_demographics_rows(*, campaign_id: int) -> list[tuple[int, dict[str, Any], str]]:
    """(annotator id, campaign answers, consent version) of every annotator who consented to the
    campaign: one query."""
    response = DemographicsResponse.objects.filter(campaign_id=campaign_id, annotator_id=OuterRef("annotator_id"))
    rows = (Enrollment.objects.filter(campaign_id=campaign_id, consented_at__isnull=False)
            .annotate(resp=Subquery(response.values("answers")[:1]),
                      version=Subquery(response.values("consent_version")[:1]))
            .order_by("annotator_id").values_list("annotator_id", "resp", "version"))
    return [(a, r or {}, v or "") for a, r, v in rows]


def release_moved(previous: DemographicsRelease | None, members: list[int]) -> int:
    """How many of the previous release's members may be in another group now: who withdrew or
    answered again since it was cut, or is no longer a member (an upper bound: a withdrawal of someone
    with no answers counts too)."""
    if previous is None:
        return 0
    since = previous.created_at
    changed = set(DemographicsResponse.objects.filter(campaign_id=previous.campaign_id, annotator_id__in=previous.members)
                  .filter(Q(updated_at__gt=since) | Q(withdrawn_at__gt=since)).values_list("annotator_id", flat=True))
    return len(changed | (set(previous.members) - set(members)))


def release_latest(*, campaign_id: int) -> DemographicsRelease | None:
    return DemographicsRelease.objects.filter(campaign_id=campaign_id).order_by("-number").first()


def release_info(release: DemographicsRelease) -> dict[str, Any]:
    return {"number": release.number, "released_at": release.created_at.isoformat(), "reason": release.reason,
            "annotators": len(release.members), "min_group": release.min_group}


def release_answers(*, campaign_id: int) -> tuple[dict[str, Any] | None, dict[int, dict[str, Any]]]:
    """The latest release (its info plus `members`) and the answers of its members who reported
    (for the report's `annotators` section, which uses nothing else); (None, {}) before the first."""
    release = release_latest(campaign_id=campaign_id)
    if release is None:
        return None, {}
    campaign = Campaign.objects.get(pk=campaign_id)
    cfg = annotation_settings(campaign)["demographics"]
    members = set(release.members)
    answers = {}
    for annotator, response, _version in campaign_demographics_rows(campaign_id=campaign_id):
        value = effective_answers(response, cfg["fields"]) if cfg["ask"] else {}
        if annotator in members and value:
            answers[int(annotator)] = value
    # A member withdrew (or answered again) since the release was cut: groups computed from today's
    # answers would differ from the release by that one person and name their group. The section
    # then shows no group until the next release (`stale`).
    stale = _nonzero(raw_sizes(release.members, answers)) != _nonzero(release.sizes)
    return {**release_info(release), "members": sorted(members), "stale": stale}, ({} if stale else answers)


def _nonzero(sizes: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {f: {g: n for g, n in by.items() if n} for f, by in sizes.items()}


def raw_sizes(members: list[int], answers: dict[int, dict[str, Any]]) -> dict[str, dict[str, int]]:
    """The raw group sizes per field of `members`, from their answers (a release's `sizes`)."""
    sizes: dict[str, dict[str, int]] = {}
    for field in FIELDS:
        by_group: dict[str, int] = {}
        for a in members:
            g = group_of(answers.get(a), field)
            by_group[g] = by_group.get(g, 0) + 1
        sizes[field] = by_group
    return sizes


def demographics_summary(*, campaign: Campaign, min_group: int | None = None) -> dict[str, Any]:
    """GET /api/campaigns/{id}/demographics/ for the researcher: the latest numbered release's group
    counts per field under the release rule (`demographics.merge_small_groups` at `min_group`, never
    below the campaign's), never live counts; `release` null and no groups before the first release.
    Plus `individual` rows only when the spec says `researcher_access: "individual"`, and then only
    of annotators who answered the campaign's own form under its current consent version."""
    cfg = annotation_settings(campaign)["demographics"]
    release = release_latest(campaign_id=campaign.pk)
    floor = max(cfg["min_group"], release.min_group if release else 0)
    effective = max(min_group or 0, floor)
    rows = campaign_demographics_rows(campaign_id=campaign.pk)
    members = [a for a, _, _ in rows]
    pending = len(set(members) - set(release.members if release else []))
    out: dict[str, Any] = {
        "ask": cfg["ask"], "fields": cfg["fields"], "researcher_access": cfg["researcher_access"],
        "consent_version": cfg["consent_version"], "min_group": effective,
        "release": release_info(release) if release else None,
        "annotators": len(release.members) if release else 0, "reported": release.reported if release else 0,
        "groups": release_counts(release.sizes, effective) if release else {},
        # a new release needs at least min_group annotators not in the last one (or the campaign's close)
        "next_release": {"new_annotators": pending, "needed": cfg["min_group"] + release_moved(release, members)},
    }
    if cfg["researcher_access"] == "individual":
        out["individual"] = [{"annotator": a, "answers": r, "consent_version": v}
                             for a, r, v in rows if r and v == cfg["consent_version"]]
    return out


def release_sizes(*, campaign: Campaign, members: list[int]) -> tuple[dict[str, dict[str, int]], int]:
    """The raw group sizes per field of `members` (a release's), and how many reported anything."""
    cfg = annotation_settings(campaign)["demographics"]
    chosen = set(members)
    answers = {a: (effective_answers(r, cfg["fields"]) if cfg["ask"] else {})
               for a, r, _ in campaign_demographics_rows(campaign_id=campaign.pk) if a in chosen}
    return raw_sizes(members, answers), sum(1 for v in answers.values() if v)
