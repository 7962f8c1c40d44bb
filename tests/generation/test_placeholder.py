"""The demo's placeholder images never show the prompt's gender or attribute words (issue 17): the
drawing gets numbers only, so prompts that differ in an identity word give the same pixels."""
from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image, ImageChops

from generation.backends import placeholder
from generation.backends.placeholder import people_count, placeholder_render

PAIRED = "Generate a picture of one {a} on the left and one {b} on the right."


def _pixels(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


def test_identity_words_change_nothing_in_the_picture() -> None:
    man = placeholder_render("A man holding an umbrella", 7, width=256, height=256)
    woman = placeholder_render("A woman holding a purse", 7, width=256, height=256)
    assert man == woman  # same seed: identical, whatever the identity or attribute words
    other_seed = placeholder_render("A man holding an umbrella", 8, width=256, height=256)
    assert ImageChops.difference(_pixels(man), _pixels(other_seed)).getbbox() is not None  # the seed varies it
    pair = placeholder_render(PAIRED.format(a="nurse", b="CEO"), 7, width=256, height=256)
    assert pair == placeholder_render(PAIRED.format(a="male nurse", b="female CEO"), 7, width=256, height=256)
    assert pair != man  # two figures for a paired prompt, one otherwise
    assert people_count(PAIRED.format(a="x", b="y")) == 2 and people_count("A man holding an umbrella") == 1


def test_the_drawing_never_receives_the_prompt_text(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, ...]] = []
    real = placeholder.figures_draw

    def spy(*args: Any, **kwargs: Any) -> Image.Image:
        seen.append(args + tuple(kwargs.values()))
        return real(*args, **kwargs)

    monkeypatch.setattr(placeholder, "figures_draw", spy)
    placeholder_render("A man holding an umbrella", 3, width=64, height=64)
    assert seen and all(isinstance(v, int) for v in seen[0])
