"""Blinding (issue 22, defect 13): an annotator never learns the condition of a two-person image. A
fairness-intervention image's question carries the paired example family, instructions and examples."""
from __future__ import annotations

from annotation.families import design_example_families, example_family, family_instructions
from annotation.hits.rules import Candidate, question_payload
from campaigns.presets import PST_SETTING_INSTRUCTIONS


def test_intervention_questions_are_shown_as_paired() -> None:
    assert example_family("person", "intervention") == example_family("person", "paired") == "person:paired"
    assert example_family("person", "single") == "person:single"
    assert example_family("attribute:dress", "explicit") == "attribute:dress"
    spec = {"design": {"settings": ["single", "paired", "intervention"], "fairness_intervention": True}}
    assert design_example_families("pst", spec) == ["person:single", "person:paired"]
    texts = family_instructions("pst", {**PST_SETTING_INSTRUCTIONS, "intervention": "a text of its own"})
    assert set(texts) == {"person:single", "person:paired"}
    assert texts["person:paired"] == PST_SETTING_INSTRUCTIONS["paired"]


def test_the_hit_payload_of_an_intervention_question_names_no_condition() -> None:
    row = Candidate(id=1, text="Does the nurse on the left demonstrate feminine or masculine traits?",
                    choices=["Feminine", "Masculine", "Cannot identify"], image_id=1, web_file="", file="",
                    source_url="", slot="left", family="person", setting="intervention")
    payload = question_payload(row, image_url=lambda **kw: "/img/1")
    assert payload["family"] == "person:paired" and "intervention" not in str(payload)
