"""An intervention image is shown to annotators exactly like a paired one: the paired instructions
and the paired examples (issue 25), so the task page never tells them which setting it is."""
from __future__ import annotations

from annotation.families import design_example_families, example_family, family_instructions
from campaigns import presets


def test_intervention_questions_are_in_the_paired_family() -> None:
    assert example_family("person", "intervention") == "person:paired"
    assert example_family("person", "single") == "person:single"
    assert example_family("attribute:dress", "neutral") == "attribute:dress"
    spec = {"design": {"settings": ["single", "paired", "intervention"]}}
    assert design_example_families("pst", spec) == ["person:single", "person:paired"]
    assert design_example_families("pst", {"design": {"settings": ["intervention"]}}) == ["person:paired"]


def test_intervention_images_get_the_paired_text() -> None:
    texts = {"single": "one person", "paired": "two people", "intervention": "a different text"}
    assert family_instructions("pst", texts) == {"person:single": "one person", "person:paired": "two people"}
    assert family_instructions("pst", {"intervention": "only this"}) == {"person:paired": "only this"}
    shown = family_instructions("pst", presets.PST_SETTING_INSTRUCTIONS)
    assert set(shown) == {"person:single", "person:paired"}
    assert family_instructions("gep", {"neutral": "x"}) == {}
