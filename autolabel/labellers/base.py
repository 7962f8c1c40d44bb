"""Labeller plug-in types and the registry (see the package docstring)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Question
from campaigns.models import Campaign

GPU_EXTRA = ("torch", "transformers")  # the CLIP and BLIP labellers' models (requirements/gpu.in)


@dataclass
class LabelResult:
    question_id: int
    choice: str | None = None      # None: failed (error says why)
    score: float | None = None     # in [0, 1]: confidence for the question's first choice
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # per-label raw values (cosine, answer text)


@dataclass
class LabelContext:
    campaign: Campaign
    config: dict[str, Any]
    stats: dict[str, int] = field(default_factory=lambda: {"embeddings_computed": 0, "embeddings_cached": 0})
    provenance: dict[str, Any] = field(default_factory=dict)  # model, revision, params, set by the labeller


@dataclass
class Labeller:
    name: str
    families: tuple[str, ...]   # question families it answers: "person", "attribute"
    run: Callable[[LabelContext, list[Question]], list[LabelResult]]
    description: str = ""
    requires: tuple[str, ...] = ()  # modules of the [gpu] extra it imports (a light worker refuses it)

    def applies(self, family: str) -> bool:
        return any(family == f or family.startswith(f + ":") for f in self.families)


_registry: dict[str, Labeller] = {}


def register(labeller: Labeller) -> None:
    _registry[labeller.name] = labeller


def registered() -> dict[str, Labeller]:
    return dict(_registry)
