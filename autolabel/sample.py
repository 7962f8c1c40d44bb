"""The spec's `autolabel.human_sample`: which images are open to human annotation.

A seeded uniform random sample without replacement, drawn per stratum (the prompt's setting, and for
a GEP prompt with an attribute also that attribute): round(fraction * n) images of a stratum of n
(at least one). The draw is a question gate (campaigns.registry): annotation calls it when it opens
questions, inside the same transaction, and the drawn images are recorded in HumanSampleImage.
Re-opening after more images were generated draws from the new images only, with the same rule.
Deterministic: numpy's Generator seeded with derive_seed(seed, "human_sample", stratum) over the
stratum's image ids in ascending order."""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from campaigns.models import Campaign
from campaigns.spec import derive_seed
from generation.models import Image

from .models import HumanSampleImage


def stratum_of(setting: str, metadata: dict) -> str:
    attribute = (metadata or {}).get("attribute")
    return f"{setting}|{attribute}" if attribute else setting


def human_sample_draw(*, fraction: float, seed: int, strata: dict[str, list[int]]) -> dict[str, list[int]]:
    """{stratum: sorted ids drawn}. Pure: the same input always draws the same images."""
    out = {}
    for stratum, ids in sorted(strata.items()):
        ids = sorted(ids)
        k = min(len(ids), max(1, round(fraction * len(ids)))) if ids else 0
        rng = np.random.default_rng(derive_seed(seed, "human_sample", stratum))
        out[stratum] = sorted(int(i) for i in rng.choice(ids, size=k, replace=False)) if k else []
    return out


def human_sample_gate(campaign: Campaign, image_ids: list[int]) -> set[int] | None:
    """The question gate: None (all open) without a human sample; else the drawn ids, recorded."""
    cfg = ((campaign.spec or {}).get("autolabel") or {}).get("human_sample")
    if not cfg or not image_ids:
        return None
    if math.isclose(float(cfg["fraction"]), 1.0):
        chosen = {"*": sorted(image_ids)}
        rows = Image.objects.filter(pk__in=image_ids).values_list("pk", "prompt__setting", "prompt__metadata")
        strata_of = {pk: stratum_of(s, m) for pk, s, m in rows}
    else:
        strata: dict[str, list[int]] = defaultdict(list)
        strata_of = {}
        for pk, setting, meta in Image.objects.filter(pk__in=image_ids).values_list("pk", "prompt__setting",
                                                                                   "prompt__metadata"):
            strata_of[pk] = stratum_of(setting, meta)
            strata[strata_of[pk]].append(pk)
        chosen = human_sample_draw(fraction=float(cfg["fraction"]), seed=int(cfg["seed"]), strata=strata)
    drawn = {i for ids in chosen.values() for i in ids}
    HumanSampleImage.objects.bulk_create(
        [HumanSampleImage(campaign=campaign, image_id=i, stratum=strata_of[i]) for i in sorted(drawn)],
        ignore_conflicts=True)
    return drawn
