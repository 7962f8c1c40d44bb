"""CLIP image embeddings, computed once per (image content sha256, model, revision, part) and cached
in ImageEmbedding; every CLIP labeller (clip, clip_cc, clip_cls, clip_gender, clipscore) reads them
through `embeddings_get`. Missing ones are computed in batches of AUTOLABEL_BATCH_SIZE.

Parts: "full" (the whole image), "left" / "right" (the left / right half of a paired PST image: a
documented approximation of "the person on the left", see docs/autolabel.md)."""
from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.core.files.storage import default_storage

from generation.models import Image

from .hf import Loaded, clip_image_embeddings
from .models import ImageEmbedding

PARTS = ("full", "left", "right")


def image_open(image: Image, part: str = "full") -> Any:
    """The stored image as an RGB PIL image (or one half of it)."""
    from PIL import Image as PILImage

    with default_storage.open(image.file) as handle:
        pil = PILImage.open(io.BytesIO(handle.read())).convert("RGB")
    if part == "left":
        return pil.crop((0, 0, pil.width // 2, pil.height))
    if part == "right":
        return pil.crop((pil.width // 2, 0, pil.width, pil.height))
    return pil


@dataclass
class EmbeddingBatch:
    vectors: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (sha256, part) -> unit vector
    computed: int = 0
    cached: int = 0
    errors: dict[tuple[int, str], str] = field(default_factory=dict)        # (image id, part) -> why


def embeddings_get(*, loaded: Loaded, wanted: Iterable[tuple[Image, str]]) -> EmbeddingBatch:
    """Embeddings of (image, part) pairs: cached rows first, the rest computed in batches and stored
    (unique key: concurrent workers computing the same one settle on the first row)."""
    out = EmbeddingBatch()
    pairs = {(img.sha256, part): img for img, part in wanted}
    if not pairs:
        return out
    shas = {sha for sha, _ in pairs}
    for sha, part, dim, blob in (ImageEmbedding.objects.filter(sha256__in=shas, model=loaded.name,
                                                               revision=loaded.revision)
                                 .values_list("sha256", "part", "dim", "vector")):
        if (sha, part) in pairs:
            out.vectors[(sha, part)] = np.frombuffer(bytes(blob), dtype="<f4", count=dim)
            out.cached += 1
    missing = [(key, img) for key, img in pairs.items() if key not in out.vectors]
    size = max(1, int(settings.AUTOLABEL_BATCH_SIZE))
    for i in range(0, len(missing), size):
        chunk = missing[i:i + size]
        pil, keys = [], []
        for (sha, part), img in chunk:
            try:
                if not sha or not img.file:
                    raise ValueError("the image has no stored file")
                pil.append(image_open(img, part))
                keys.append((sha, part))
            except Exception as exc:  # an unreadable file fails its questions, not the batch
                out.errors[(img.pk, part)] = f"{type(exc).__name__}: {exc}"[:500]
        if not pil:
            continue
        vectors = clip_image_embeddings(loaded, pil)
        rows = []
        for key, vec in zip(keys, vectors, strict=True):
            out.vectors[key] = vec
            rows.append(ImageEmbedding(sha256=key[0], part=key[1], model=loaded.name, revision=loaded.revision,
                                       dim=int(vec.shape[0]), vector=vec.astype("<f4").tobytes()))
        ImageEmbedding.objects.bulk_create(rows, ignore_conflicts=True)
        out.computed += len(rows)
    return out
