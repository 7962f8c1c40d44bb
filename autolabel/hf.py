"""The one place models are loaded (transformers), from a hub name or a local directory, and the
batched CLIP / BLIP calls the labellers make. Loaded models are kept per process (a worker labels
many batches with the same model); `AUTOLABEL_DEVICE` picks the device ("auto": cuda when there,
else cpu) and fp16 is used on CUDA unless AUTOLABEL_FP16 is false.

Heavy imports (torch, transformers) happen inside the functions: the web process never pays them.
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings

_lock = threading.Lock()


@dataclass
class Loaded:
    model: Any
    processor: Any
    name: str
    revision: str   # the commit hash the hub resolved, or "local" for a directory
    device: str
    dtype: Any


def _device() -> str:
    wanted = getattr(settings, "AUTOLABEL_DEVICE", "auto")
    if wanted != "auto":
        return wanted
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _revision_of(model: Any, name: str) -> str:
    commit = getattr(getattr(model, "config", None), "_commit_hash", None)
    return str(commit) if commit else "local"


@functools.lru_cache(maxsize=4)
def _load(kind: str, name: str, revision: str | None) -> Loaded:
    import torch
    from transformers import AutoProcessor, BlipForQuestionAnswering, CLIPModel

    device = _device()
    dtype = torch.float16 if device.startswith("cuda") and getattr(settings, "AUTOLABEL_FP16", True) else torch.float32
    cls = CLIPModel if kind == "clip" else BlipForQuestionAnswering
    kwargs: dict[str, Any] = {"revision": revision} if revision else {}
    model = cls.from_pretrained(name, dtype=dtype, **kwargs).to(device).eval()  # type: ignore[arg-type]
    processor = AutoProcessor.from_pretrained(name, **kwargs)
    return Loaded(model, processor, name, revision or _revision_of(model, name), device, dtype)


def model_load(kind: str, name: str, revision: str | None = None) -> Loaded:
    """kind: "clip" or "blip_vqa"; name: a hub id or a local path (settings.AUTOLABEL_MODEL_DIR is
    tried first for a bare name, so an air-gapped host can keep its weights there)."""
    with _lock:
        return _load(kind, _resolve(name), revision)


def _resolve(name: str) -> str:
    import os

    base = getattr(settings, "AUTOLABEL_MODEL_DIR", "")
    if base and not os.path.isabs(name):
        candidate = os.path.join(base, name)
        if os.path.isdir(candidate):
            return candidate
    return name


def _features(out: Any) -> Any:
    # transformers 5 returns a ModelOutput whose pooler_output is the projected embedding.
    return out if hasattr(out, "shape") else out.pooler_output


def _unit(x: Any) -> np.ndarray:
    arr = x.detach().float().cpu().numpy()
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return (arr / np.maximum(norms, 1e-12)).astype(np.float32)


def clip_image_embeddings(loaded: Loaded, images: list[Any]) -> np.ndarray:
    """L2-normalised image embeddings, shape (n, dim), float32."""
    import torch

    inputs = loaded.processor(images=images, return_tensors="pt")
    pixel_values = inputs["pixel_values"].to(loaded.device, dtype=loaded.dtype)
    with torch.inference_mode():
        return _unit(_features(loaded.model.get_image_features(pixel_values=pixel_values)))


def clip_text_embeddings(loaded: Loaded, texts: list[str], batch_size: int = 256) -> np.ndarray:
    """L2-normalised text embeddings, shape (n, dim), float32."""
    import torch

    out = []
    for i in range(0, len(texts), batch_size):
        inputs = loaded.processor(text=texts[i:i + batch_size], return_tensors="pt", padding=True, truncation=True)
        inputs = {k: v.to(loaded.device) for k, v in inputs.items()}
        with torch.inference_mode():
            out.append(_unit(_features(loaded.model.get_text_features(**inputs))))
    dim = int(loaded.model.config.projection_dim)
    return np.concatenate(out) if out else np.zeros((0, dim), dtype=np.float32)


def clip_logit_scale(loaded: Loaded) -> float:
    return float(loaded.model.logit_scale.exp().item())


def blip_answers(loaded: Loaded, images: list[Any], questions: list[str], max_new_tokens: int = 10) -> list[str]:
    """BLIP VQA: one generated answer per (image, question), lower-cased and stripped."""
    import torch

    inputs = loaded.processor(images=images, text=questions, return_tensors="pt", padding=True)
    inputs = {k: (v.to(loaded.device, dtype=loaded.dtype) if k == "pixel_values" else v.to(loaded.device))
              for k, v in inputs.items()}
    with torch.inference_mode():
        ids = loaded.model.generate(**inputs, max_new_tokens=max_new_tokens)
    return [t.strip().lower() for t in loaded.processor.batch_decode(ids, skip_special_tokens=True)]
