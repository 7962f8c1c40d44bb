"""Self-reported annotator demographics: the vocabulary, the spec's `annotation.demographics` and
`annotation.pay_floor_usd_per_hour` settings, answer validation and the reporting groups.

Pure (no models): the spec validator imports it before the app registry is ready.

Why: "perceived gender" depends on who perceives it (the GEP paper notes 57% of its MTurk workers
were women), so a report can break its figures down by who labelled. The answers are optional,
consented (with a versioned consent text) and erasable; researchers see group counts only from
numbered releases, under the release rule (`merge_small_groups`: no cell under `min_group`, none
that follows from the others), unless the campaign's spec says `researcher_access: "individual"`.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from common.inputs import BodyError, brief
from common.numbers import number

from .countries import COUNTRIES

FIELDS = ("gender", "age_band", "country")
PREFER_NOT = "prefer_not_to_say"
SELF_DESCRIBE = "self_describe"
SELF_DESCRIBED_KEY = "gender_self_described"  # free text that goes with gender = self_describe
SELF_DESCRIBED_MAX = 100
GENDERS: dict[str, str] = {"woman": "Woman", "man": "Man", "non_binary": "Non-binary",
                           SELF_DESCRIBE: "I describe myself as:", PREFER_NOT: "Prefer not to say"}
AGE_BANDS: dict[str, str] = {b: b for b in ("18-24", "25-34", "35-44", "45-54", "55-64", "65+")}
AGE_BANDS[PREFER_NOT] = "Prefer not to say"
ACCESS = ("aggregate", "individual")
NOT_REPORTED = "not reported"  # the group of annotators without an answer (or who prefer not to say)
OTHER = "other"                # small groups merged (fewer than `min_group` annotators)
PROFILE_CONSENT_VERSION = "profile"  # consent of demographics written through PATCH /api/annotators/me/
DEFAULT_PAY_FLOOR = 12.0  # USD per hour: the GEP paper's lower bound
DEFAULT_MIN_GROUP = 5     # the smallest group a release shows (the spec may raise it, never lower)
MAX_MIN_GROUP = 1000

_CONSENT = {
    "aggregate": (
        "These questions are optional. Your answers are used only to report how people in different groups "
        "answered (counts and figures per group of at least 5 annotators); researchers do not see your "
        "individual answers. Your answers to the task are never affected. You can withdraw at any time: your "
        "demographic answers are then erased."),
    "individual": (
        "These questions are optional. Your answers are used to report how people in different groups answered, "
        "and the researchers of this task can see them next to your pseudonymous annotator id (never your name). "
        "Your answers to the task are never affected. You can withdraw at any time: your demographic answers are "
        "then erased."),
    # `researcher_access: "individual"` with `publish: true`: the one consent under which the public
    # replication package may carry an annotator's answers next to their pseudonym (metrics/package).
    "publish": (
        "These questions are optional. Your answers are used to report how people in different groups answered; "
        "the researchers of this task can see them next to your pseudonymous annotator id (never your name), and "
        "they will be published with the study's replication data next to that pseudonymous id, so that others "
        "can check the figures. Your answers to the task are never affected. You can withdraw at any time before "
        "publication: your demographic answers are then erased."),
}


def default_section(*, ask: bool = False) -> dict[str, Any]:
    return {"ask": ask, "fields": list(FIELDS), "consent_version": "1", "researcher_access": "aggregate",
            "publish": False, "consent_text": _CONSENT["aggregate"], "min_group": DEFAULT_MIN_GROUP}


def choices() -> dict[str, list[list[str]]]:
    """(value, label) lists of each field, for the task page's form."""
    return {"gender": [[k, v] for k, v in GENDERS.items()],
            "age_band": [[k, v] for k, v in AGE_BANDS.items()],
            "country": [*([k, v] for k, v in sorted(COUNTRIES.items(), key=lambda kv: kv[1])),
                        [PREFER_NOT, "Prefer not to say"]]}


def validate_demographics(raw: Any, p: Any) -> dict[str, Any]:
    """`annotation.demographics`: `true`/`false` (the first format: ask with the defaults, or not) or
    {"ask", "fields", "consent_version", "researcher_access", "consent_text", "min_group"}; every default
    written out. `min_group` (5 to 1000, default 5) is the smallest group a release shows: the
    researcher's `?min_group=` may raise it, never lower it.
    `p` is the spec's Problems collector (one message per bad field)."""
    where = "annotation.demographics"
    if isinstance(raw, bool):
        return default_section(ask=raw)
    if raw is None:
        return default_section()
    if not isinstance(raw, Mapping):
        p.add(where, "must be true, false or an object {ask, fields, consent_version, researcher_access}")
        return default_section()
    out = default_section()
    allowed = ("ask", "fields", "consent_version", "researcher_access", "publish", "consent_text", "min_group")
    for key in raw:
        if key not in allowed:
            p.add(f"{where}.{key}", f"unknown key {key!r} (allowed: {', '.join(allowed)})")
    ask = raw.get("ask", False)
    if not isinstance(ask, bool):
        p.add(f"{where}.ask", "must be true or false")
    else:
        out["ask"] = ask
    fields = raw.get("fields", list(FIELDS))
    if (not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields)
            or len(set(fields)) != len(fields) or not set(fields) <= set(FIELDS)):
        p.add(f"{where}.fields", f"must be a non-empty list of distinct fields from {', '.join(FIELDS)}")
    else:
        out["fields"] = [f for f in FIELDS if f in fields]
    version = raw.get("consent_version", "1")
    if isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    if not isinstance(version, str) or not version.strip() or len(version) > 32 or version == PROFILE_CONSENT_VERSION:
        p.add(f"{where}.consent_version", "must be a non-empty string of at most 32 characters (not 'profile')")
    else:
        out["consent_version"] = version.strip()
    access = raw.get("researcher_access", "aggregate")
    if access not in ACCESS:
        p.add(f"{where}.researcher_access", f"must be one of {', '.join(ACCESS)}, got {access!r}")
    else:
        out["researcher_access"] = access
    min_group = raw.get("min_group", DEFAULT_MIN_GROUP)
    if isinstance(min_group, bool) or not isinstance(min_group, int) or not DEFAULT_MIN_GROUP <= min_group <= MAX_MIN_GROUP:
        p.add(f"{where}.min_group", f"must be an integer from {DEFAULT_MIN_GROUP} to {MAX_MIN_GROUP}, got {min_group!r}")
    else:
        out["min_group"] = min_group
    publish = raw.get("publish", False)
    if not isinstance(publish, bool):
        p.add(f"{where}.publish", "must be true or false")
    elif publish and out["researcher_access"] != "individual":
        p.add(f"{where}.publish", "needs researcher_access: individual (publication is of individual answers)")
    else:
        out["publish"] = publish
    text = raw.get("consent_text", _CONSENT["publish" if out["publish"] else out["researcher_access"]])
    if not isinstance(text, str) or not text.strip() or len(text) > 5000:
        p.add(f"{where}.consent_text", "must be a non-empty string of at most 5000 characters")
    else:
        out["consent_text"] = text
    return out


def validate_pay_floor(raw: Any, p: Any) -> float:
    value = None if isinstance(raw, bool) or not isinstance(raw, (int, float)) else raw  # text is not a number here
    try:
        return number(value, field="annotation.pay_floor_usd_per_hour", kind="float", minimum=0, maximum=1000)
    except BodyError:
        p.add("annotation.pay_floor_usd_per_hour", f"must be a number between 0 and 1000, got {brief(raw)}")
        return DEFAULT_PAY_FLOOR


def _field_error(field: str, value: Any, vocabulary: Mapping[str, str]) -> str | None:
    if not isinstance(value, str) or value not in vocabulary:
        sample = ", ".join(list(vocabulary)[:8])
        return f"must be one of {sample}{', ...' if len(vocabulary) > 8 else ''}; got {value!r}"
    return None


def _vocabulary(field: str) -> Mapping[str, str]:
    if field == "gender":
        return GENDERS
    if field == "age_band":
        return AGE_BANDS
    return {**COUNTRIES, PREFER_NOT: "Prefer not to say"}


def validate_answers(answers: Any, fields: list[str], *, prefix: str = "answers") -> tuple[dict[str, str],
                                                                                         dict[str, list[str]]]:
    """Clean the self-reported answers against the campaign's `fields`: each optional, one of its
    vocabulary (country: ISO 3166-1 alpha-2), gender `self_describe` with free text
    (`gender_self_described`, at most 100 characters). Returns (clean answers, errors by dotted field)."""
    errors: dict[str, list[str]] = {}
    if not isinstance(answers, Mapping):
        return {}, {prefix: ["must be an object, e.g. {\"gender\": \"woman\", \"age_band\": \"25-34\"}"]}
    clean: dict[str, str] = {}
    for key, value in answers.items():
        if key == SELF_DESCRIBED_KEY:
            continue
        if key not in fields:
            errors[f"{prefix}.{key}"] = [f"not asked in this campaign (asked: {', '.join(fields)})"]
            continue
        if value in (None, ""):
            continue  # left blank: not answered
        if key == "country" and isinstance(value, str) and len(value) == 2:
            value = value.upper()
        message = _field_error(key, value, _vocabulary(key))
        if message:
            errors[f"{prefix}.{key}"] = [message]
        else:
            clean[key] = value
    described = answers.get(SELF_DESCRIBED_KEY)
    if clean.get("gender") == SELF_DESCRIBE:
        if not isinstance(described, str) or not described.strip():
            errors[f"{prefix}.{SELF_DESCRIBED_KEY}"] = ["describe your gender, or choose another answer"]
        elif len(described.strip()) > SELF_DESCRIBED_MAX:
            errors[f"{prefix}.{SELF_DESCRIBED_KEY}"] = [f"at most {SELF_DESCRIBED_MAX} characters"]
        else:
            clean[SELF_DESCRIBED_KEY] = described.strip()
    elif described not in (None, ""):
        errors[f"{prefix}.{SELF_DESCRIBED_KEY}"] = ["only with gender = self_describe"]
    if not clean and not errors:
        errors[prefix] = ["answer at least one question (or close the form: every question is optional)"]
    return clean, errors


def validate_profile(demographics: Any) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """PATCH /api/annotators/me/ `demographics`: an object of the documented fields only (gender,
    age_band, country, gender_self_described) in the task form's vocabulary; any other key (e.g.
    `religion`) is a 400 naming it and nothing is stored. `{}` erases them."""
    bad = {"demographics": ["Must be an object of short answers, e.g. {\"age_band\": \"25-34\"}."]}
    if not isinstance(demographics, dict) or len(json.dumps(demographics)) > 4000 or not all(
            isinstance(v, (str, int, float, bool, type(None))) for v in demographics.values()):
        return {}, bad
    unknown = {f"demographics.{k}": [f"not a documented field (allowed: {', '.join((*FIELDS, SELF_DESCRIBED_KEY))})"]
               for k in demographics if k not in (*FIELDS, SELF_DESCRIBED_KEY)}
    if unknown:
        return {}, unknown
    if not demographics:
        return {}, {}
    return validate_answers(demographics, list(FIELDS), prefix="demographics")


def group_of(answers: Mapping[str, Any] | None, field: str) -> str:
    """The reporting group of one annotator for one field: the answer's value, `not reported` for no
    answer or "prefer not to say", `self-described` for a free-text gender (the text itself is never a
    group: it could name one person)."""
    value = (answers or {}).get(field)
    if not isinstance(value, str) or value in ("", PREFER_NOT) or value not in _vocabulary(field):
        return NOT_REPORTED
    if field == "gender" and value == SELF_DESCRIBE:
        return "self-described"
    return value


def merge_small_groups(groups: Mapping[Any, str], min_size: int) -> tuple[dict[Any, str], dict[str, int | None]]:
    """Protect individuals (the release rule's cells, docs/security.md): every group of fewer than
    `min_size` members is merged into `other`, and then, complementary, while `other` holds some
    members but fewer than `min_size`, the next smallest group joins it: no reported cell is under
    `min_size`, so none follows from the others and the total. A single named group holding every
    member is reported as `other` (it would name everyone's answer). Returns (member -> reported
    group, reported group -> member count); a count is None only when every member is in `other`
    and there are fewer than `min_size` of them (nothing is reported then)."""
    sizes: dict[str, int] = {}
    for g in groups.values():
        sizes[g] = sizes.get(g, 0) + 1
    merged_names = merged_groups(sizes, min_size)
    merged = {m: (OTHER if g in merged_names else g) for m, g in groups.items()}
    counts: dict[str, int | None] = {}
    for g in merged.values():
        counts[g] = (counts.get(g) or 0) + 1
    if OTHER in counts and (counts[OTHER] or 0) < min_size:
        counts[OTHER] = None
    return merged, dict(sorted(counts.items(), key=lambda kv: (kv[0] in (OTHER, NOT_REPORTED), kv[0])))


def merged_groups(sizes: Mapping[str, int], min_size: int) -> set[str]:
    """The groups reported as `other` under the rule of :func:`merge_small_groups`."""
    small = {g for g, n in sizes.items() if 0 < n < min_size}
    while small and sum(sizes[g] for g in small) < min_size:
        rest = sorted((g for g, n in sizes.items() if g not in small and n > 0), key=lambda g: (sizes[g], g))
        if not rest:
            break
        small.add(rest[0])
    # A release where everyone who answered is in one group (the rest `not reported`) would name each
    # answerer's group: that group is shown as `other` too.
    named = [g for g, n in sizes.items() if n > 0 and g not in small and g != NOT_REPORTED]
    if len(named) == 1 and not small:
        small.add(named[0])
    return small


def release_shrinks(previous: Mapping[str, Mapping[str, int]], sizes: Mapping[str, Mapping[str, int]],
                    min_size: int, moved: int) -> list[str]:
    """The fields where a new release (raw `sizes`) would let the difference with the `previous` one
    name where a moved annotator was (a withdrawal: their group becomes `not reported`; a changed
    answer; an annotator no longer a member). The rule (docs/security.md): on the cells the new
    release shows, every cell holds at least what the previous release had in the same groups, and
    the cell holding `not reported` `moved` more. Then joiners alone explain every cell's change
    whichever group each moved annotator left, so the difference points at no group."""
    out = []
    for field, now in sizes.items():
        before = dict(previous.get(field, {}))
        before[NOT_REPORTED] = before.get(NOT_REPORTED, 0) + moved
        merged = merged_groups(now, min_size)
        cells_now: dict[str, int] = {}
        cells_before: dict[str, int] = {}
        for g in set(now) | set(before):
            cell = OTHER if g in merged else g
            cells_now[cell] = cells_now.get(cell, 0) + now.get(g, 0)
            cells_before[cell] = cells_before.get(cell, 0) + before.get(g, 0)
        if any(cells_now[c] < cells_before[c] for c in cells_now):
            out.append(field)
    return out


def release_counts(sizes: Mapping[str, Mapping[str, int]], min_size: int) -> dict[str, dict[str, int | None]]:
    """Per field, the counts a release shows at `min_size` (from its raw group sizes)."""
    out: dict[str, dict[str, int | None]] = {}
    for field, by_group in sizes.items():
        members = {(g, i): g for g, n in by_group.items() for i in range(int(n))}
        out[field] = merge_small_groups(members, min_size)[1]
    return out


def effective_answers(response: Mapping[str, Any] | None, fields: Any = FIELDS) -> dict[str, Any]:
    """What an annotator reported for a campaign: their answers to that campaign's own form (under
    its consent), the fields it asks only. The profile's answers (PATCH /api/annotators/me/) count in
    no campaign: a campaign counts only what was given to it, with its consent."""
    return {k: v for k, v in (response or {}).items() if k in fields or (k == SELF_DESCRIBED_KEY and "gender" in fields)}
