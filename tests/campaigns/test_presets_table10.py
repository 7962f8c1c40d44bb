"""The PST preset's annotation defaults are the PST paper's own instructions (its Table 10), word for
word: each setting's "Instruction:" line and the "Response:" questions; the shared introduction is
the paper's sentence without the name of its authors' university (lab-neutral)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from annotation.families import family_instructions
from annotation.spec_section import annotation_settings
from campaigns import presets
from campaigns.spec import spec_normalize

TABLE10 = Path(__file__).resolve().parents[1] / "fixtures" / "reference" / "pst_table10.txt"


def _table10() -> dict[str, list[str]]:
    """{setting: [paragraphs]} from the paper's table (HTML paragraphs, checkboxes dropped)."""
    out = {}
    for line in TABLE10.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip() or line.startswith("Setting\t"):
            continue
        setting, cell = line.split("\t", 1)
        paragraphs = [re.sub(r"\s+", " ", p).strip() for p in re.findall(r"<p>(.*?)</p>", cell)]
        out[setting.lower()] = paragraphs
    return out


def _placeholders(text: str) -> str:
    """The paper's `$\\{id_1\\}` / `$\\{id_2\\}` are our `{identity}`."""
    return re.sub(r"\$\\\{id_[12]\\\}\$", "{identity}", text)


def test_the_pst_defaults_are_table_10_word_for_word() -> None:
    table = _table10()
    assert set(table) == {"single", "paired"}
    for setting, (intro, image, instruction, response) in table.items():
        assert presets.PST_INSTRUCTIONS_INTRO_PAPER == intro
        assert presets.PST_INSTRUCTIONS_INTRO == intro.replace(" from UCLA", "")
        assert "UCLA" not in presets.PST_INSTRUCTIONS_INTRO and "gender fairness" in presets.PST_INSTRUCTIONS_INTRO
        assert image == "Image: {Image}"
        assert "Instruction: " + presets.PST_SETTING_INSTRUCTIONS_PAPER[setting] == instruction
        # The default: the same words, but "the image shown" (the task page puts it beside the text).
        assert presets.PST_SETTING_INSTRUCTIONS[setting] == presets.PST_SETTING_INSTRUCTIONS_PAPER[setting].replace(
            "Given the image above,", "Given the image shown,")
        assert "above" not in presets.PST_SETTING_INSTRUCTIONS[setting]
        questions = [_placeholders(q) for q in re.findall(r"Does the .*? traits\?", response)]
        wanted = ["single"] if setting == "single" else ["left", "right"]
        assert questions == [presets.PST_QUESTIONS[k] for k in wanted]
    assert presets.PST_SETTING_INSTRUCTIONS["intervention"] == presets.PST_SETTING_INSTRUCTIONS["paired"]


@pytest.mark.django_db
def test_a_pst_campaign_gets_them_by_default_and_may_override(settings: Any) -> None:
    spec = spec_normalize({"name": "t10", "kind": "pst", "seed": 1,
                           "design": {"aspect": "occupation", "settings": ["single", "paired"]},
                           "backend": {"name": "placeholder"}})
    section = spec["annotation"]
    assert section["instructions"] == presets.PST_INSTRUCTIONS_INTRO
    assert section["setting_instructions"] == presets.PST_SETTING_INSTRUCTIONS
    assert {k: section["questions"][k] for k in ("single", "left", "right")} == presets.PST_QUESTIONS
    assert family_instructions("pst", section["setting_instructions"])["person:paired"].startswith(
        "Given the image shown, decide whether the two individuals")
    custom = spec_normalize({**spec, "annotation": {"setting_instructions": {"single": "Look closely."}}})
    assert custom["annotation"]["setting_instructions"] == {"single": "Look closely."}
    with pytest.raises(Exception) as bad:
        spec_normalize({**spec, "annotation": {"setting_instructions": {"neutral": "x"}}})
    assert "annotation.setting_instructions.neutral" in getattr(bad.value, "errors", {})
    gep = spec_normalize({"name": "g", "kind": "gep", "seed": 1, "design": {"settings": ["neutral"]},
                          "backend": {"name": "placeholder"}})
    assert gep["annotation"]["setting_instructions"] == {}  # a GEP setting would reveal a gendered prompt

    class _C:
        kind, spec = "pst", {"annotation": {}}
    assert annotation_settings(_C())["setting_instructions"] == presets.PST_SETTING_INSTRUCTIONS
