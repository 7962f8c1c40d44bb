"""Machine labels, human samples and CLIPScores for the machine-label / hybrid report tests (issue 15),
and the GEP paper's Table 6 scores."""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User

from autolabel.models import HumanSampleImage, ImageClipScore, MachineLabel
from campaigns.models import Campaign
from generation.models import Image

from .metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label

# GEP Table 6: GEP_C, GEP_CC, GEP_CLS and GEP_human on (neutral, explicit) x (CogView, DALLE, Stable).
TABLE_6 = {
    "C": [5.15e-3, 5.06e-3, 4.80e-3, 9.81e-3, 9.76e-3, 7.08e-3],
    "CC": [4.49e-3, 5.68e-3, 4.77e-3, 1.10e-2, 1.04e-2, 6.58e-3],
    "CLS": [3.79e-2, 4.26e-2, 4.47e-2, 9.25e-2, 5.18e-2, 6.32e-2],
}
TABLE_6_HUMAN = [0.02, 0.05, 0.07, 0.18, 0.12, 0.14]

BIG_GEP = {**SMALL_GEP, "name": "gep-sources", "design": {**SMALL_GEP["design"], "samples": 12}}


def machine_labels(campaign: Campaign, labeller: str, truth: Callable[[Any], str], flip: float, seed: int = 1,
                   scores: bool = True) -> None:
    """One label per question: the human truth, flipped with probability `flip`; a score for the
    question's first choice that separates the two (noisily)."""
    rng = random.Random(seed)
    rows = []
    for q in campaign.questions.filter(is_gold=False).order_by("id"):
        target = truth(q)
        choice = target if rng.random() >= flip else next(c for c in q.choices if c != target)
        first = 1.0 if choice == q.choices[0] else 0.0
        score = min(1.0, max(0.0, 0.6 * first + 0.4 * rng.random())) if scores else None
        rows.append(MachineLabel(campaign=campaign, question=q, labeller=labeller, choice=choice, score=score,
                                 model="tiny-clip"))
    MachineLabel.objects.bulk_create(rows)


def gep_sources_campaign(owner: User) -> Campaign:
    """A GEP campaign whose humans labelled a recorded third of the images, with `clip_cls` labels
    (10% flipped, with scores) on every question and a CLIPScore per image."""
    campaign, questions = campaign_with_questions(owner, BIG_GEP)
    images = list(Image.objects.filter(campaign=campaign).order_by("id"))
    sample = {img.pk for img in images[::3]}
    answer_all(campaign, [q for q in questions if q.image_id in sample], gep_label, annotators(3))
    HumanSampleImage.objects.bulk_create([HumanSampleImage(campaign=campaign, image_id=i, stratum="s")
                                          for i in sorted(sample)])
    machine_labels(campaign, "clip_cls", gep_label, flip=0.1)
    ImageClipScore.objects.bulk_create([ImageClipScore(campaign=campaign, image=img, model="tiny-clip",
                                                       score=0.5 + 0.01 * (k % 10)) for k, img in enumerate(images)])
    return campaign


def similarity_labels(campaign: Campaign, labeller: str, truth: Callable[[Any], str], key: str = "cos",
                      seed: int = 2) -> dict[int, float]:
    """GEP_C / GEP_CC-like labels: a raw similarity stored in `params[key]` (higher when the human truth
    is "Yes"), score = (1 + raw) / 2 as the labellers store it. Returns raw per question id."""
    rng = random.Random(seed)
    rows, raw = [], {}
    for q in campaign.questions.filter(is_gold=False).order_by("id"):
        x = (0.30 if truth(q) == q.choices[0] else 0.20) + 0.05 * rng.random()
        if key == "diff":
            x -= 0.25
        raw[q.pk] = x
        rows.append(MachineLabel(campaign=campaign, question=q, labeller=labeller, choice="Yes" if x > 0.25 else "No",
                                 score=(1 + x) / 2, model="tiny-clip", params={"threshold": 0.25, key: x}))
    MachineLabel.objects.bulk_create(rows)
    return raw
