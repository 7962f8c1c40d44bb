"""CPU-only synthetic images for the demo and tests: the prompt text on a colour derived from the
seed. Deterministic (same prompt and seed, same pixels) and marked `synthetic`."""
from __future__ import annotations

import hashlib
import io
import textwrap
import time
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw

from . import GenerationItem, GenerationOutput

BATCH_SIZE = 4


def placeholder_render(prompt: str, seed: int, *, width: int, height: int) -> bytes:
    digest = hashlib.sha256(str(seed).encode()).digest()
    background = (digest[0], digest[1], digest[2])
    # Dark text on light backgrounds and the reverse, so the prompt stays readable.
    ink = (0, 0, 0) if sum(background) > 380 else (255, 255, 255)
    image = Image.new("RGB", (width, height), background)
    draw = ImageDraw.Draw(image)
    chars = max(8, width // 7)
    lines = textwrap.wrap(prompt, width=chars)[: max(1, height // 14 - 2)]
    y = 6
    for line in lines:
        draw.text((6, y), line, fill=ink)
        y += 14
    draw.text((6, height - 16), f"seed {seed}", fill=ink)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()


class PlaceholderBackend:
    name = "placeholder"

    def batch_size(self, params: Mapping[str, Any]) -> int:
        return BATCH_SIZE

    def generate(self, items: Sequence[GenerationItem], params: Mapping[str, Any]) -> list[GenerationOutput]:
        width, height = int(params.get("width") or 512), int(params.get("height") or 512)
        delay = float(params.get("delay_s") or 0)
        outputs = []
        for item in items:
            started = time.perf_counter()
            if delay:
                time.sleep(delay)  # simulates a slow model (demo progress, crash-recovery tests)
            data = placeholder_render(item.prompt, item.seed, width=width, height=height)
            outputs.append(GenerationOutput(
                status="done", data=data, wall_time_s=round(time.perf_counter() - started, 4), model="placeholder",
                params={"width": width, "height": height, "delay_s": delay}, synthetic=True,
            ))
        return outputs


BACKEND = PlaceholderBackend()
