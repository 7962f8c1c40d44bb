"""Spec constants, deployment limits, the section/backend registries, the problem collector and the text loader."""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Literal

from common.errors import ApplicationError
from common.inputs import BodyError, BodySyntaxError, json_loads, yaml_loads

SPEC_VERSION = 1
# The one vocabulary (tests/contracts/test_vocabulary.py): the kinds and setting names every app compares
# against come from here (and the models' TextChoices), never as string literals.
PST, GEP = KINDS = ("pst", "gep")
PST_ASPECTS = ("occupation", "power")
SINGLE, PAIRED, INTERVENTION = PST_SETTINGS = ("single", "paired", "intervention")
NEUTRAL, EXPLICIT = GEP_SETTINGS = ("neutral", "explicit")
# The same names as types (mypy needs the words themselves; tests/metrics/test_report_types.py holds them equal).
PstSettingName = Literal["single", "paired", "intervention"]
GepSettingName = Literal["neutral", "explicit"]
SETTINGS_BY_KIND: dict[str, tuple[str, ...]] = {PST: PST_SETTINGS, GEP: GEP_SETTINGS}
ALL_SETTINGS = (*PST_SETTINGS, *GEP_SETTINGS)
STEREOTYPES = ("masculine", "feminine")
# Deployment limits (settings of the same name; README "Configuration"), checked while the spec is
# read, before anything is expanded: every list length, and the prompt and image counts computed
# arithmetically from them. A design over a limit is a 400 naming the field and the setting.
LIMIT_DEFAULTS: dict[str, int] = {
    "MAX_IMAGES_PER_CAMPAIGN": 100_000,
    "MAX_PROMPTS_PER_CAMPAIGN": 100_000,
    "SPEC_MAX_SAMPLES": 1000,        # images per prompt
    "SPEC_MAX_IDENTITIES": 1000,     # per PST identity group; also occupations and roles (power aspect)
    "SPEC_MAX_ATTRIBUTES": 1000,     # GEP
    "SPEC_MAX_CONTEXTS": 1000,       # GEP
    "SPEC_MAX_GENDERS": 100,         # GEP
    "SPEC_MAX_TEXT_CHARS": 2000,     # a template or a phrase; a description may be 10 times longer
}
MAX_SAMPLES = LIMIT_DEFAULTS["SPEC_MAX_SAMPLES"]
MAX_PROMPTS = LIMIT_DEFAULTS["MAX_PROMPTS_PER_CAMPAIGN"]
_FORBIDDEN_IN_NAMES = ("|", "\n", "\r", "\t")

# Validators for spec sections owned by other apps (e.g. "backend" by generation, "annotation" by
# annotation), registered from their AppConfig.ready(). Each takes the raw section and returns the
# normalised one, adding problems to the collector. Keeps campaigns free of imports from them.
SectionValidator = Callable[[Any, "Problems", Mapping[str, Any]], Any]
_section_validators: dict[str, SectionValidator] = {}
_backend_validators: dict[str, SectionValidator] = {}


def register_section(name: str, validator: SectionValidator) -> None:
    _section_validators[name] = validator


def register_backend(name: str, validator: SectionValidator) -> None:
    _backend_validators[name] = validator


def known_backends() -> list[str]:
    return sorted(_backend_validators)


class SpecError(ApplicationError):
    """A spec with problems; `errors` maps dotted field paths to messages."""


class Problems:
    """Collects every problem of a spec so the researcher sees them all at once."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def add(self, path: str, message: str) -> None:
        self.errors.setdefault(path, []).append(message)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        if self.errors:
            first_path, first_msgs = next(iter(self.errors.items()))
            count = sum(len(m) for m in self.errors.values())
            more = f" (and {count - 1} more)" if count > 1 else ""
            raise SpecError(f"Invalid campaign spec: {first_path}: {first_msgs[0]}{more}", errors=self.errors)


def limit(name: str) -> int:
    """The deployment's value of a spec limit (LIMIT_DEFAULTS outside Django)."""
    try:
        from django.conf import settings

        if settings.configured:
            return int(getattr(settings, name, LIMIT_DEFAULTS[name]))
    except ImportError:  # pragma: no cover - the module is usable without Django
        pass
    return LIMIT_DEFAULTS[name]


def _over(count: int, name: str, what: str) -> str:
    return (f"lists {count:,} {what}; this deployment allows at most {limit(name):,} ({name}); "
            "split the design into several campaigns")


def derive_seed(campaign_seed: int, *parts: object) -> int:
    """A 31-bit seed derived from the campaign seed and a path of names (stable across runs,
    machines and Python versions; fits torch.manual_seed, numpy and a PostgreSQL integer)."""
    text = "\x1f".join([str(campaign_seed), *(str(p) for p in parts)])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF


def spec_load_text(text: str | bytes, *, filename: str = "") -> Any:
    """Parse a spec file: JSON, or YAML (by extension or when JSON fails), with the input rules of
    every request body (common.inputs: no YAML aliases, bounded depth and size, clean text)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SpecError("The spec file is not UTF-8 text.", errors={"spec": [f"not UTF-8 (byte {exc.start})"]}) from None
    try:
        if filename.endswith((".yaml", ".yml")):
            return yaml_loads(text)
        try:
            return json_loads(text)
        except BodySyntaxError as json_error:
            try:
                return yaml_loads(text)
            except BodySyntaxError:
                raise SpecError(f"The spec is neither valid JSON nor YAML: {json_error.message}",
                                errors={"spec": ["neither valid JSON nor YAML"]}) from None
    except BodyError as exc:
        errors = {("spec" if path == "body" else path): msgs for path, msgs in exc.errors.items()}
        raise SpecError(exc.message, errors=errors) from None
