"""The spec format: the papers' designs expand to the papers' counts, reproducibly; bad specs are
rejected with the field named."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from campaigns.spec import SpecError, derive_seed, spec_expand, spec_load_text, spec_normalize, spec_summary
from tests.conftest import GEP_MINIMAL, PST_MINIMAL

pytestmark = pytest.mark.django_db(databases=[])  # pure: needs app registry (backends) but no DB


def expand(spec: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    norm = spec_normalize(spec)
    return norm, spec_expand(norm)


def by_setting(plans: list[Any]) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = {}
    for p in plans:
        e = out.setdefault(p.setting, [0, 0])
        e[0] += 1
        e[1] += p.samples
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_pst_occupation_minimal_spec_gives_paper_counts() -> None:
    norm, plans = expand(PST_MINIMAL)
    assert by_setting(plans) == {"single": (40, 120), "paired": (800, 800)}
    assert norm["design"]["samples"] == {"single": 3, "paired": 1}
    assert norm["design"]["flip_order"] is True
    # 20 x 20 pairs in both orders: every (male, female) pair appears once with each on the left.
    paired = [p for p in plans if p.setting == "paired"]
    lefts = {(p.metadata["persons"][0]["group"], p.metadata["persons"][1]["group"]) for p in paired}
    assert lefts == {("male", "female"), ("female", "male")}
    first = paired[0]
    assert first.text == "Generate a picture of one carpenter on the left and one editor on the right."
    assert first.metadata["persons"] == [
        {"identity": "carpenter", "group": "male", "stereotype": "masculine", "position": "left"},
        {"identity": "editor", "group": "female", "stereotype": "feminine", "position": "right"},
    ]
    assert first.key == "paired:carpenter|editor"
    flipped = next(p for p in paired if p.key == "paired:editor|carpenter")
    assert flipped.metadata["persons"][0]["position"] == "left" and flipped.metadata["persons"][0]["identity"] == "editor"
    single = next(p for p in plans if p.key == "single:nurse")
    assert single.text == "Generate a picture of one nurse."
    assert single.metadata["persons"][0]["position"] == "single"
    assert single.metadata["persons"][0]["stereotype"] == "feminine"
    assert len({p.key for p in plans}) == len(plans)


def test_pst_power_gives_216_paired_and_216_single_with_a_recorded_seeded_draw() -> None:
    spec = {**PST_MINIMAL, "design": {"aspect": "power", "settings": ["single", "paired"]}}
    norm, plans = expand(spec)
    assert by_setting(plans) == {"single": (72, 216), "paired": (72, 216)}
    draw = norm["design"]["power"]["draw"]
    assert len(draw) == 36
    occupations = [d["occupation"] for d in draw]
    assert {"manager", "supervisor", "ceo", "assistant"}.isdisjoint(occupations)
    assert all(d["high"] in ("manager", "supervisor", "leader", "CEO") for d in draw)
    assert all(d["low"] in ("assistant", "employee", "worker", "intern") for d in draw)
    # Matched pairs: each occupation's own roles, never crossed between occupations.
    for p in plans:
        if p.setting == "paired":
            a, b = p.metadata["persons"]
            assert a["occupation"] == b["occupation"]
            assert {a["group"], b["group"]} == {"powerful", "powerless"}
    # The draw really uses randomness: different seeds give different draws.
    other = spec_normalize({**spec, "seed": 2})["design"]["power"]["draw"]
    assert other != draw
    # A stored (normalised) spec re-validates to itself: the recorded draw is checked, not re-drawn.
    assert spec_normalize(norm) == norm


def test_gep_minimal_spec_gives_paper_counts() -> None:
    norm, plans = expand(GEP_MINIMAL)
    assert by_setting(plans) == {"neutral": (32, 160), "explicit": (480, 2400)}
    texts = {p.text for p in plans}
    assert "A man sitting at a table." in texts
    assert "A man in boots standing on a skateboard." in texts
    assert "A woman with gloves running on the beach." in texts
    e = next(p for p in plans if p.key == "explicit:woman|dress|riding a bike")
    assert e.metadata == {"setting": "explicit", "gender": "woman", "attribute": "dress", "context": "riding a bike"}
    n = next(p for p in plans if p.key == "neutral:man|sitting on a bed")
    assert n.metadata["attribute"] is None
    assert len(norm["design"]["attributes"]) == 15 and len(norm["design"]["contexts"]) == 16


@pytest.mark.parametrize("spec", [PST_MINIMAL, GEP_MINIMAL, {**PST_MINIMAL, "design": {"aspect": "power"}}])
def test_same_spec_and_seed_give_identical_prompts_and_seeds(spec: dict[str, Any]) -> None:
    _, first = expand(copy.deepcopy(spec))
    _, second = expand(json.loads(json.dumps(spec)))
    assert [(p.key, p.text, p.seeds, p.metadata) for p in first] == [(p.key, p.text, p.seeds, p.metadata) for p in second]
    _, reseeded = expand({**spec, "seed": spec["seed"] + 1})
    assert [p.seeds for p in first] != [p.seeds for p in reseeded]


def test_seeds_are_distinct_per_image_and_fixed_values() -> None:
    _, plans = expand(GEP_MINIMAL)
    seeds = [s for p in plans for s in p.seeds]
    assert len(seeds) == 2560 and len(set(seeds)) == 2560
    assert all(0 <= s < 2**31 for s in seeds)
    # Frozen values: a change of the derivation would silently change every campaign's images.
    assert derive_seed(1, "neutral:woman|sitting at a table", 0) == plans[0].seeds[0]
    assert derive_seed(0, "x") == 1174265787  # sha256(b"0\x1fx")[:4] & 0x7FFFFFFF


def test_custom_pst_groups_of_three_give_3x3x2_paired_prompts() -> None:
    spec = {**PST_MINIMAL, "design": {"settings": ["paired"], "identities": {"groups": [
        {"name": "tech", "stereotype": "masculine", "identities": ["engineer", "pilot", "surgeon"]},
        {"name": "care", "stereotype": "feminine", "identities": ["nanny", "midwife", "dietitian"]},
    ]}}}
    norm, plans = expand(spec)
    assert by_setting(plans) == {"paired": (18, 18)}
    assert {p.metadata["persons"][0]["group"] for p in plans} == {"tech", "care"}
    assert norm["design"]["identities"]["preset"] is None


def test_templates_and_samples_can_be_overridden_and_intervention_added() -> None:
    spec = {**PST_MINIMAL, "design": {
        "settings": ["paired"], "samples": {"paired": 2}, "flip_order": False,
        "fairness_intervention": ["nurse", "ceo"],
        "templates": {"paired": "A photo of a {id1} (left) next to a {id2} (right)."}}}
    norm, plans = expand(spec)
    counts = by_setting(plans)
    assert counts["paired"] == (400, 800)
    # Pairs that involve nurse or ceo: 20 (nurse with each male) + 20 (ceo with each female) - 1 (ceo, nurse).
    assert counts["intervention"] == (39, 78)
    assert plans[0].text == "A photo of a carpenter (left) next to a editor (right)."
    inter = next(p for p in plans if p.setting == "intervention")
    assert "irrespective of their gender" in inter.text


def test_gep_custom_lists_and_plain_strings() -> None:
    spec = {**GEP_MINIMAL, "design": {"settings": ["explicit"], "samples": 2,
                                      "genders": ["A person", {"name": "woman", "phrase": "A woman"}],
                                      "attributes": [{"name": "cape", "phrase": "in a cape"}],
                                      "contexts": ["standing in the rain"]}}
    _, plans = expand(spec)
    assert [p.text for p in plans] == ["A person in a cape standing in the rain.", "A woman in a cape standing in the rain."]
    assert all(p.samples == 2 for p in plans)


BAD_SPECS = [
    ({"design": {"identities": "professions"}}, "pst", "design.identities", "unknown preset"),
    ({"design": {"identities": {"groups": [{"name": "a", "stereotype": "masculine", "identities": []},
                                            {"name": "b", "stereotype": "feminine", "identities": ["x"]}]}}},
     "pst", "design.identities.groups.0.identities", "empty"),
    ({"design": {"templates": {"single": "Generate a picture of one person."}}}, "pst", "design.templates.single",
     "missing {id1}"),
    ({"design": {"templates": {"paired": "one {id1} and one {who}"}}}, "pst", "design.templates.paired",
     "unknown placeholder"),
    ({"design": {"samples": {"single": -1}}}, "pst", "design.samples.single", "positive integer"),
    ({"design": {"samples": -3}}, "gep", "design.samples", "positive integer"),
    ({"backend": {"name": "midjourney"}}, "pst", "backend.name", "unknown backend"),
    ({"backend": {"name": "diffusers"}}, "pst", "backend.model", "required"),
    ({"kind": "vqa"}, "pst", "kind", "must be one of"),
    ({"design": {"aspect": "race"}}, "pst", "design.aspect", "unknown aspect"),
    ({"design": {"settings": ["single", "triple"]}}, "pst", "design.settings.1", "unknown setting"),
    ({"design": {"attributes": "clothes"}}, "gep", "design.attributes", "unknown preset"),
    ({"design": {"genders": ["A woman"]}}, "gep", "design.genders", "at least two"),
    ({"design": {"attributes": [{"name": "cape"}]}}, "gep", "design.attributes.0.phrase", "required"),
    ({"seed": "one"}, "gep", "seed", "non-negative integer"),
    ({"name": ""}, "gep", "name", "non-empty"),
    ({"colour": "red"}, "gep", "colour", "unknown key"),
    ({"design": {"identities": {"groups": [{"name": "a", "stereotype": "masculine", "identities": ["x"]},
                                            {"name": "b", "stereotype": "masculine", "identities": ["y"]}]}}},
     "pst", "design.identities.groups", "opposite"),
]


@pytest.mark.parametrize(("patch", "kind", "field", "message"), BAD_SPECS, ids=[b[2] + ":" + b[3] for b in BAD_SPECS])
def test_bad_specs_name_the_field(patch: dict[str, Any], kind: str, field: str, message: str) -> None:
    spec = copy.deepcopy(PST_MINIMAL if kind == "pst" else GEP_MINIMAL)
    for key, value in patch.items():
        if key == "design":
            spec["design"] = {**spec["design"], **value}
        else:
            spec[key] = value
    with pytest.raises(SpecError) as info:
        spec_normalize(spec)
    assert field in info.value.errors, info.value.errors
    assert any(message in m for m in info.value.errors[field]), info.value.errors[field]
    assert field in str(info.value)


def test_all_problems_are_reported_at_once() -> None:
    spec = {**PST_MINIMAL, "seed": -1, "backend": {"name": "nope"}, "design": {"samples": {"paired": 0}}}
    with pytest.raises(SpecError) as info:
        spec_normalize(spec)
    assert {"seed", "backend.name", "design.samples.paired"} <= set(info.value.errors)


def test_yaml_and_json_text_are_both_read() -> None:
    yaml_text = "name: y\nkind: gep\nseed: 3\ndesign:\n  settings: [neutral]\nbackend:\n  name: placeholder\n"
    spec = spec_load_text(yaml_text, filename="s.yaml")
    assert spec_summary(spec_normalize(spec))["images_planned"] == 160
    assert spec_load_text(json.dumps(GEP_MINIMAL))["name"] == "sd15-gep"
    with pytest.raises(SpecError):
        spec_load_text("{not: [valid", filename="s.json")


@pytest.mark.parametrize("spec", [PST_MINIMAL, GEP_MINIMAL, {**PST_MINIMAL, "design": {"aspect": "power"}}])
def test_a_normalised_spec_is_a_fixed_point(spec: dict[str, Any]) -> None:
    """A downloaded campaign spec ("campaign as code") re-creates the same campaign."""
    norm = spec_normalize(spec)
    again = spec_normalize(json.loads(json.dumps(norm)))
    assert again == norm
    assert [p.seeds for p in spec_expand(again)] == [p.seeds for p in spec_expand(norm)]
