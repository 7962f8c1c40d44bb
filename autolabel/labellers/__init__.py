"""Labellers as plug-ins, keyed by name (`clip`, `clip_cc`, `clip_cls`, `clip_gender`, `vqa`, `vlm`;
`import` is the upload path, not a runnable labeller). A labeller turns a batch of questions into
`LabelResult`s; the service stores them (autolabel/services.py). Options and defaults of each are
validated by the spec section (campaigns/spec/autolabel.py) and documented in docs/autolabel.md."""
from __future__ import annotations

from .base import LabelContext, Labeller, LabelResult, register, registered

__all__ = ["LabelContext", "Labeller", "LabelResult", "register", "labeller_get", "labeller_names"]


def _load_builtin() -> None:
    from . import clip, vlm, vqa  # noqa: F401  (each registers itself on import)


def labeller_get(name: str) -> Labeller | None:
    _load_builtin()
    return registered().get(name)


def labeller_names() -> list[str]:
    _load_builtin()
    return sorted(registered())
