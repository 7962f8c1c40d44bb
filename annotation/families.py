"""Question families as annotators and examples see them (pure, no Django).

A question's `family` is what a qualification test attaches to: `person` (PST) or
`attribute:<name>` (GEP). Instructions and example images are per *example family*, finer for PST:
one per setting, as the PST paper instructed single and paired images differently (its Table 10):

    PST  person + setting single  -> "person:single"   (also "person:paired")
    GEP  attribute:dress          -> "attribute:dress" (GEP used 5 positive and 5 negative examples each)

A setting is part of it only where the annotator sees it anyway (one person or two). A two-person
image of the fairness intervention is "person:paired" like a plain paired one, with the paired
instruction text and examples: the family travels in the HIT payload, and an annotator must never
learn which condition a two-person image comes from (issue 22, blinding). A GEP question's setting
(neutral / explicit) is never part of it either: it would tell the annotator whether the prompt
named a gender.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PERSON = "person"
PST_SETTINGS = ("single", "paired", "intervention")
PERSON_CHOICES = ["Feminine", "Masculine", "Cannot identify"]
ATTRIBUTE_CHOICES = ["Yes", "No"]


# The setting whose example family (instructions, examples) a setting's questions use.
_SHOWN_AS = {"intervention": "paired"}


def example_family(family: str, setting: str) -> str:
    """The example family of a question with this `family` and `setting` (blind to the intervention)."""
    return f"{PERSON}:{_SHOWN_AS.get(setting, setting)}" if family == PERSON else family


def family_choices(key: str) -> list[str]:
    """The answers a question of this example family offers."""
    return list(PERSON_CHOICES if key.startswith(PERSON + ":") else ATTRIBUTE_CHOICES)


def campaign_families(kind: str, spec: Mapping[str, Any]) -> list[str]:
    """Every example family a campaign's design can have: its PST settings, or its GEP attributes."""
    design = spec.get("design") if isinstance(spec, Mapping) else None
    design = design if isinstance(design, Mapping) else {}
    if kind == "pst":
        settings = design.get("settings") or ["single", "paired"]
        if design.get("fairness_intervention"):
            settings = [*settings, "intervention"]
        families = [example_family(PERSON, s) for s in settings if s in PST_SETTINGS]
        return list(dict.fromkeys(families))
    names = [a.get("name") if isinstance(a, Mapping) else a for a in _as_list(design.get("attributes"))]
    return [f"attribute:{n}" for n in names if isinstance(n, str) and n]


def family_instructions(kind: str, setting_instructions: Mapping[str, str]) -> dict[str, str]:
    """The `annotation.setting_instructions` of a campaign keyed by example family (PST only). The
    intervention's two-person images use the paired text (its own text, if any, only where the
    campaign has no paired text), so the instructions never tell the conditions apart."""
    if kind != "pst":
        return {}
    out: dict[str, str] = {}
    for s in sorted(setting_instructions, key=lambda k: k in _SHOWN_AS):  # a setting's own text first
        out.setdefault(example_family(PERSON, s), setting_instructions[s])
    return out


def _as_list(value: Any) -> Iterable[Any]:
    return value if isinstance(value, list) else []
