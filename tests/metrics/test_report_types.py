"""The report's TypedDicts (metrics/sections/types.py, checked by mypy where the report is built) and
its JSON Schema (metrics/sections/schema.py, checked against every report the tests build) name the
same keys: each typed section's required keys are the schema's required ones, and its optional keys
the schema's other documented ones."""
from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from metrics.sections.schema import AGREEMENT_FIGURES, SECTIONS
from metrics.sections.types import TYPED_SECTIONS, AgreementBasis, AgreementFigures


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


def test_a_key_in_one_and_not_the_other_is_seen() -> None:
    class Drifted(TypedDict):
        id: int
        extra: NotRequired[str]

    assert not _agrees(Drifted, SECTIONS["campaign"])
