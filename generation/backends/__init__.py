"""Generation backends behind one small interface: prompts + seeds + parameters in, images out.

A backend is looked up by the name in the campaign spec's `backend` section (`backend_get`). It
receives a batch of `GenerationItem`s (one image each: prompt text and seed) and the validated
backend parameters, and returns one `GenerationOutput` per item, in order. Errors are classified
so the Celery task knows what to do:

- `TransientError`: timeouts, HTTP 429 / 5xx, a lost connection: the task retries with backoff.
- `OutOfMemory`: the GPU ran out of memory: the task halves its batch and tries again.
- `PermanentError`: bad parameters, a model that cannot be loaded: every image of the batch is
  marked failed with the message. A refusal of one prompt (content policy) is not an exception:
  the backend returns a `failed` output for that item only.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class BackendError(Exception):
    """Base of the classified backend errors."""


class TransientError(BackendError):
    """Worth retrying later; `retry_after` (seconds) when the server said how long to wait."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class OutOfMemory(TransientError):
    """The accelerator ran out of memory for this batch size."""


class PermanentError(BackendError):
    """Retrying cannot help (bad parameters, unknown model, unsupported scheduler, ...)."""


@dataclass(frozen=True)
class GenerationItem:
    image_id: int
    prompt: str
    seed: int


@dataclass
class GenerationOutput:
    """One image, or why there is none. `data` is the encoded image (PNG) when status is done."""

    status: str  # "done" | "filtered" | "failed"
    data: bytes | None = None
    error: str = ""
    wall_time_s: float | None = None
    revised_prompt: str = ""
    model: str = ""
    revision: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    synthetic: bool = False


class Backend(Protocol):
    name: str

    def batch_size(self, params: Mapping[str, Any]) -> int:
        """How many images one task (and one model call, where the model batches) handles."""

    def generate(self, items: Sequence[GenerationItem], params: Mapping[str, Any]) -> list[GenerationOutput]:
        """One output per item, in order; raises TransientError / OutOfMemory / PermanentError."""


# Module per backend, imported on first use so a web process never imports torch.
_MODULES = {
    "diffusers": "generation.backends.diffusers_pipeline",
    "openai": "generation.backends.openai_images",
    "placeholder": "generation.backends.placeholder",
}


def backend_get(name: str) -> Backend:
    module_name = _MODULES.get(name)
    if module_name is None:
        raise PermanentError(f"backend {name!r} does not generate images (backends: {', '.join(_MODULES)})")
    return importlib.import_module(module_name).BACKEND
