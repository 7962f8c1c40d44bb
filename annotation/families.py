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

from campaigns.spec import INTERVENTION, PAIRED, PST, PST_SETTINGS, SINGLE

# The question families (a question's `family`): the one place their words are spelled
# (tests/contracts/test_vocabulary.py).
PERSON = "person"
ATTRIBUTE = "attribute"
_ATTRIBUTE_PREFIX = ATTRIBUTE + ":"
PERSON_CHOICES = ["Feminine", "Masculine", "Cannot identify"]
ATTRIBUTE_CHOICES = ["Yes", "No"]


# What an annotator is shown for a setting: an intervention image shows two people like a paired one,
# so it gets the paired instructions and examples (annotators must not learn which setting it is).
SHOWN_AS = {INTERVENTION: PAIRED}


def attribute_family(name: str) -> str:
    """The question family of a GEP attribute: `attribute:<name>`."""
    return _ATTRIBUTE_PREFIX + name


def family_attribute(family: str) -> str | None:
    """The attribute name of a GEP question family, None for any other family."""
    return family[len(_ATTRIBUTE_PREFIX):] if family.startswith(_ATTRIBUTE_PREFIX) else None


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


def design_example_families(kind: str, spec: Mapping[str, Any]) -> list[str]:
    """Every example family (instructions and example images) a campaign's design can have: one per PST
    setting as shown (`person:single`, `person:paired`), or one per GEP attribute (`attribute:<name>`).
    Not the question families (`annotation.services.lifecycle.question_families`)."""
    design = spec.get("design") if isinstance(spec, Mapping) else None
    design = design if isinstance(design, Mapping) else {}
    if kind == PST:
        settings = design.get("settings") or [SINGLE, PAIRED]
        shown = [SHOWN_AS.get(s, s) for s in settings if s in PST_SETTINGS]
        return [f"{PERSON}:{s}" for s in dict.fromkeys(shown)]
    names = [a.get("name") if isinstance(a, Mapping) else a for a in _as_list(design.get("attributes"))]
    return [attribute_family(n) for n in names if isinstance(n, str) and n]


def family_instructions(kind: str, setting_instructions: Mapping[str, str]) -> dict[str, str]:
    """The `annotation.setting_instructions` of a campaign keyed by example family (PST only)."""
    if kind != PST:
        return {}
    out = {f"{PERSON}:{s}": text for s, text in setting_instructions.items() if s not in SHOWN_AS}
    for s, shown in SHOWN_AS.items():  # an intervention-only design still gets its text, as paired
        if s in setting_instructions:
            out.setdefault(f"{PERSON}:{shown}", setting_instructions[s])
    return out


def _as_list(value: Any) -> Iterable[Any]:
    return value if isinstance(value, list) else []
