"""The report's TypedDicts (metrics/sections/types.py, checked by mypy where the report is built) and
its JSON Schema (metrics/sections/schema.py, checked against every report the tests build) name the
same keys: each typed section's required keys are the schema's required ones, and its optional keys
the schema's other documented ones. Every section the schema gives keys is typed."""
from __future__ import annotations

from typing import Any, NotRequired, TypedDict, get_args

from campaigns.spec import GEP_SETTINGS, PST_SETTINGS
from metrics.sections.schema import AGREEMENT_BASIS, AGREEMENT_FIGURES, GEP_SETTING, PST_SETTING, SECTIONS
from metrics.sections.types import (
    TYPED_SECTIONS,
    AgreementBasis,
    AgreementFigures,
    GepSetting,
    GepSettingName,
    PstSetting,
    PstSettingName,
)


def _keys(typed: Any) -> tuple[set[str], set[str]]:
    return set(typed.__required_keys__), set(typed.__optional_keys__)


def _agrees(typed: Any, schema: dict[str, Any]) -> bool:
    required, optional = _keys(typed)
    return required == set(schema["required"]) and optional == set(schema["properties"]) - required


def test_each_typed_section_has_the_schema_keys() -> None:
    assert set(TYPED_SECTIONS) <= set(SECTIONS)
    for name, typed in TYPED_SECTIONS.items():
        assert _agrees(typed, SECTIONS[name]), name
    assert _agrees(AgreementFigures, AGREEMENT_FIGURES)
    assert _agrees(AgreementBasis, SECTIONS["agreement"]["properties"]["basis"])
    assert _agrees(AgreementBasis, SECTIONS["annotators"]["properties"]["agreement_basis"])


def test_every_section_with_keys_in_the_schema_is_typed() -> None:
    # The untyped ones are `object` in the schema (keyed by reference, labeller or setting) or a list.
    keyed = {name for name, schema in SECTIONS.items() if "properties" in schema}
    assert keyed == set(TYPED_SECTIONS)
    assert set(SECTIONS) - keyed == {"amplification", "auto", "hybrid", "clipscore", "warnings"}


def test_nested_setting_blocks_have_the_schema_keys() -> None:
    assert _agrees(PstSetting, PST_SETTING)
    assert _agrees(GepSetting, GEP_SETTING)
    assert AGREEMENT_BASIS is SECTIONS["agreement"]["properties"]["basis"]
    for setting in PST_SETTINGS:
        assert SECTIONS["pst"]["properties"][setting] is PST_SETTING
        assert TYPED_SECTIONS["pst"].__annotations__[setting] == NotRequired[PstSetting]
    for setting in GEP_SETTINGS:
        assert SECTIONS["gep"]["properties"][setting] is GEP_SETTING
        assert TYPED_SECTIONS["gep"].__annotations__[setting] == NotRequired[GepSetting]


def test_the_setting_name_literals_are_the_spec_names() -> None:
    # pst.py / gep.py cast the spec's `str` setting names to these to key the sections: sound only if equal.
    assert get_args(PstSettingName) == PST_SETTINGS
    assert get_args(GepSettingName) == GEP_SETTINGS


def test_a_key_in_one_and_not_the_other_is_seen() -> None:
    class Drifted(TypedDict):
        id: int
        extra: NotRequired[str]

    assert not _agrees(Drifted, SECTIONS["campaign"])
