"""Question families as annotators and examples see them (pure, no Django).

A question's `family` is what a qualification test attaches to: `person` (PST) or
`attribute:<name>` (GEP). Instructions and example images are per *example family*, finer for PST:
one per setting, as the PST paper instructed single and paired images differently (its Table 10):

    PST  person + setting single  -> "person:single"   (also "person:paired"; an intervention image is
                                                        shown as paired: "person:paired")
    GEP  attribute:dress          -> "attribute:dress" (GEP used 5 positive and 5 negative examples each)

A GEP question's setting (neutral / explicit) is never part of it: it would tell the annotator
whether the prompt named a gender.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PERSON = "person"
PST_SETTINGS = ("single", "paired", "intervention")
PERSON_CHOICES = ["Feminine", "Masculine", "Cannot identify"]
ATTRIBUTE_CHOICES = ["Yes", "No"]


# What an annotator is shown for a setting: an intervention image shows two people like a paired one,
# so it gets the paired instructions and examples (annotators must not learn which setting it is).
SHOWN_AS = {"intervention": "paired"}


def example_family(family: str, setting: str) -> str:
    """The example family of a question with this `family` and `setting`."""
    return f"{PERSON}:{SHOWN_AS.get(setting, setting)}" if family == PERSON else family


def canonical_example_family(key: str) -> str:
    """An example family as annotators may see it: an old `person:intervention` (stored before the
    intervention setting was shown as paired) becomes `person:paired`; any other key is kept."""
    prefix, _, setting = key.partition(":")
    return f"{PERSON}:{SHOWN_AS[setting]}" if prefix == PERSON and setting in SHOWN_AS else key


def family_choices(key: str) -> list[str]:
    """The answers a question of this example family offers."""
    return list(PERSON_CHOICES if key.startswith(PERSON + ":") else ATTRIBUTE_CHOICES)


def campaign_families(kind: str, spec: Mapping[str, Any]) -> list[str]:
    """Every example family a campaign's design can have: its PST settings, or its GEP attributes."""
    design = spec.get("design") if isinstance(spec, Mapping) else None
    design = design if isinstance(design, Mapping) else {}
    if kind == "pst":
        settings = design.get("settings") or ["single", "paired"]
        shown = [SHOWN_AS.get(s, s) for s in settings if s in PST_SETTINGS]
        return [f"{PERSON}:{s}" for s in dict.fromkeys(shown)]
    names = [a.get("name") if isinstance(a, Mapping) else a for a in _as_list(design.get("attributes"))]
    return [f"attribute:{n}" for n in names if isinstance(n, str) and n]


def family_instructions(kind: str, setting_instructions: Mapping[str, str]) -> dict[str, str]:
    """The `annotation.setting_instructions` of a campaign keyed by example family (PST only)."""
    if kind != "pst":
        return {}
    out = {f"{PERSON}:{s}": text for s, text in setting_instructions.items() if s not in SHOWN_AS}
    for s, shown in SHOWN_AS.items():  # an intervention-only design still gets its text, as paired
        if s in setting_instructions:
            out.setdefault(f"{PERSON}:{shown}", setting_instructions[s])
    return out


def _as_list(value: Any) -> Iterable[Any]:
    return value if isinstance(value, list) else []
