"""CPU-only synthetic images for the demo and tests: neutral stick-like figures on a colour derived
from the seed. Deterministic (same prompt and seed, same pixels) and marked `synthetic`.

The prompt's words never reach the picture (issue 17): an image that printed "A man holding an
umbrella" taught annotators that the task is trivial. `figures_draw` receives only numbers (the seed
and how many people the prompt asks for: two for the PST's paired prompts "... on the left and ...
on the right", else one), so two prompts that differ only in an identity word give the same image.
"""
from __future__ import annotations

import hashlib
import io
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw

from . import GenerationItem, GenerationOutput

BATCH_SIZE = 4
_PAIRED = re.compile(r"\bon the left\b.*\bon the right\b", re.IGNORECASE | re.DOTALL)


def people_count(prompt: str) -> int:
    """How many figures to draw: 2 for a paired prompt (left and right), else 1. Only this number of
    the prompt reaches the drawing."""
    return 2 if _PAIRED.search(prompt or "") else 1


def figures_draw(seed: int, people: int, *, width: int, height: int) -> Image.Image:
    """`people` neutral figures (head, body, arms, legs) whose colours, sizes and poses vary with the
    seed, on a background colour from the seed, and the seed in a corner. No text from the prompt."""
    digest = hashlib.sha256(str(seed).encode()).digest()
    background = (digest[0], digest[1], digest[2])
    ink = (0, 0, 0) if sum(background) > 380 else (255, 255, 255)
    image = Image.new("RGB", (width, height), background)
    draw = ImageDraw.Draw(image)
    for n in range(people):
        b = digest[4 + 6 * n: 10 + 6 * n]
        cx = width * (2 * n + 1) / (2 * people)          # centre of this person's half (or the middle)
        scale = min(width / people * 1.5, height) * (0.70 + b[0] / 255 * 0.2)
        top = height - scale * 0.95 - 2
        head = scale * 0.11
        body_w, body_h = scale * (0.16 + b[1] / 255 * 0.06), scale * 0.38
        colour = (64 + b[2] // 2, 64 + b[3] // 2, 64 + b[4] // 2)
        skin = (150 + b[5] // 3, 120 + b[5] // 4, 100 + b[5] // 5)
        draw.ellipse((cx - head, top, cx + head, top + 2 * head), fill=skin, outline=ink)
        body_top = top + 2 * head + scale * 0.02
        draw.rounded_rectangle((cx - body_w, body_top, cx + body_w, body_top + body_h), radius=max(1, int(body_w / 3)),
                               fill=colour, outline=ink)
        line = max(1, int(scale * 0.035))
        swing = (b[0] - 128) / 128 * scale * 0.12            # pose: arms up or down with the seed
        shoulder = body_top + body_h * 0.15
        for side in (-1, 1):
            draw.line((cx + side * body_w, shoulder, cx + side * (body_w + scale * 0.14), shoulder + scale * 0.2 + swing),
                      fill=colour, width=line)
            draw.line((cx + side * body_w * 0.5, body_top + body_h, cx + side * body_w * 0.8,
                       min(height - 1, body_top + body_h + scale * 0.4)), fill=colour, width=line)
    draw.text((4, height - 14), f"seed {seed}", fill=ink)
    return image


def placeholder_render(prompt: str, seed: int, *, width: int, height: int) -> bytes:
    image = figures_draw(seed, people_count(prompt), width=width, height=height)
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
