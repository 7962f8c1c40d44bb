"""Autolabel test helpers: campaigns whose images are real stored PNGs (made here, no generation),
opened for annotation."""
from __future__ import annotations

import copy
import io
from typing import Any

import numpy as np
from django.contrib.auth.models import User
from PIL import Image as PILImage

from annotation.services.lifecycle import questions_open
from campaigns.models import Campaign
from campaigns.services import campaign_create
from generation.models import Image
from generation.storage import image_store
from tests.conftest import GEP_MINIMAL, PST_MINIMAL


def png(seed: int, size: tuple[int, int] = (48, 32)) -> bytes:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 255, size=(size[1], size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def make_campaign(owner: User, *, kind: str = "gep", autolabel: dict[str, Any] | None = None,
                  name: str = "auto", **design: Any) -> Campaign:
    spec = copy.deepcopy(GEP_MINIMAL if kind == "gep" else PST_MINIMAL)
    spec["name"] = name
    spec["backend"] = {"name": "placeholder"}
    spec["design"].update(design)
    if autolabel is not None:
        spec["autolabel"] = autolabel
    return campaign_create(owner=owner, spec=spec)


def add_images(campaign: Campaign, setting: str, count: int, *, seed: int = 0) -> list[Image]:
    prompts = list(campaign.prompts.filter(setting=setting).order_by("position")[:count])
    rows = []
    for n, p in enumerate(prompts):
        stored = image_store(png(seed * 1000 + n))
        rows.append(Image(campaign=campaign, prompt=p, sample_index=0, seed=p.seeds[0], status=Image.Status.DONE,
                          file=stored.file, web_file=stored.web_file, sha256=stored.sha256,
                          width=stored.width, height=stored.height))
    return Image.objects.bulk_create(rows)


def opened(campaign: Campaign) -> Campaign:
    questions_open(campaign=campaign)
    campaign.refresh_from_db()
    return campaign


# Three attributes and two contexts: the explicit setting has 2 genders x 3 attributes x 2 contexts.
SMALL_GEP = {"settings": ["explicit"], "attributes": ["dress", "suit", "tie"],
             "contexts": ["sitting at a table", "riding a bike"]}
