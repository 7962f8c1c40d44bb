"""Hand-made report inputs for the hybrid (human sample + machine) sections, without a database."""
from __future__ import annotations

import numpy as np

from metrics.extract.data import CampaignData, CampaignFacts
from metrics.extract.machine import MachineData

ATTRS = ["dress", "tie"]
TRUTH = {("woman", "dress"): 0.6, ("woman", "tie"): 0.1, ("man", "dress"): 0.05, ("man", "tie"): 0.5}
SPEC = {"design": {"genders": [{"name": "woman"}, {"name": "man"}], "attributes": [{"name": a} for a in ATTRS]}}


def hybrid_gep_data(seed: int, per_gender: int = 300, fraction: float = 0.3) -> tuple[CampaignData, np.ndarray, MachineData]:
    """A hand-made GEP campaign (2 attributes, known truth), human labels on a random sample of images and a
    machine with label-dependent error on every question (no database)."""
    rng = np.random.default_rng(seed)
    n_img = 2 * per_gender
    image = np.repeat(np.arange(1, n_img + 1), len(ATTRS))
    gender = np.where(image <= per_gender, "woman", "man")
    attribute = np.tile(ATTRS, n_img)
    p = np.array([TRUTH[(g, a)] for g, a in zip(gender, attribute, strict=True)])
    yes = rng.random(image.size) < p
    human_all = np.where(yes, "Yes", "No")
    flip = np.where(yes, rng.random(image.size) < 0.2, rng.random(image.size) < 0.1)  # label-dependent error
    machine_choice = np.where(flip, np.where(yes, "No", "Yes"), human_all)
    score = np.clip(np.where(machine_choice == "Yes", 0.7, 0.3) + rng.normal(0, 0.1, image.size), 0, 1)
    sampled_images = rng.random(n_img) < fraction
    sampled = sampled_images[image - 1]
    human = np.where(sampled, human_all, "")  # humans label the sample only
    q = image.size
    facts = CampaignFacts(id=1, name="t", kind="gep", kind_display="GEP", status="done", seed=seed, spec=SPEC)
    data = CampaignData(facts, np.arange(q, dtype=np.int64), image.astype(np.int64), np.full(q, "neutral"),
                        {"gender": gender, "attribute": attribute, "context": np.full(q, "c"),
                         "sample_index": np.zeros(q, np.int64)},
                        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), ["No", "Yes"])
    mdata = MachineData("clip_cls", machine_choice.astype(str), score, np.full(q, "Yes"), "m", sampled, True, [])
    return data, human.astype(str), mdata
