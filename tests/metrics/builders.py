"""Build labelled campaigns through the product's own models (campaign from a preset spec, images,
questions with the documented metadata, answers from several annotators), fast (bulk inserts)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User

from annotation.models import Annotator, Answer, Question
from campaigns.models import Campaign, Prompt
from campaigns.services import campaign_create
from generation.models import Image

PST_CHOICES = ["Feminine", "Masculine", "Cannot identify"]
GEP_CHOICES = ["Yes", "No"]


def annotators(n: int, prefix: str = "ann") -> list[Annotator]:
    out = []
    for i in range(n):
        user, _ = User.objects.get_or_create(username=f"{prefix}{i}")
        annotator, _ = Annotator.objects.get_or_create(user=user)
        out.append(annotator)
    return out


def make_images(campaign: Campaign) -> list[Image]:
    prompts = list(Prompt.objects.filter(campaign=campaign).order_by("position"))
    Image.objects.bulk_create([
        Image(campaign=campaign, prompt=p, sample_index=s, seed=p.seeds[s], status=Image.Status.DONE,
              backend="placeholder", synthetic=True)
        for p in prompts for s in range(p.samples)
    ], batch_size=2000)
    return list(Image.objects.filter(campaign=campaign).select_related("prompt").order_by("prompt__position",
                                                                                          "sample_index"))


def make_questions(campaign: Campaign, images: list[Image], required: int = 3) -> list[Question]:
    """Questions per METHOD.md: PST 1 per person (single / left / right), GEP neutral 15, explicit 1."""
    rows = []
    design = campaign.spec["design"]
    for img in images:
        meta = img.prompt.metadata
        base = {"setting": meta["setting"], "prompt_key": img.prompt.key, "sample_index": img.sample_index}
        if campaign.kind == "pst":
            for person in meta["persons"]:
                rows.append(Question(
                    campaign=campaign, image=img, slot=person["position"], family="person", setting=meta["setting"],
                    text=f"Does the {person['identity']} show feminine or masculine traits?", choices=PST_CHOICES,
                    metadata={**base, "identity": person["identity"], "group": person["group"],
                              "position": person["position"]}, required=required))
        else:
            attrs = design["attributes"] if meta["setting"] == "neutral" else [
                a for a in design["attributes"] if a["name"] == meta["attribute"]]
            for a in attrs:
                rows.append(Question(
                    campaign=campaign, image=img, slot=a["name"], family=f"attribute:{a['name']}",
                    setting=meta["setting"], text=f"Do you see a person {a['phrase']}?", choices=GEP_CHOICES,
                    metadata={**base, "gender": meta["gender"], "attribute": a["name"], "context": meta["context"]},
                    required=required))
    Question.objects.bulk_create(rows, batch_size=2000)
    return list(Question.objects.filter(campaign=campaign).order_by("id"))


def answer_all(campaign: Campaign, questions: list[Question], label_of: Callable[[Question], str | None],
               raters: list[Annotator], *, dissent_every: int = 3) -> int:
    """Three (or more) answers per question whose majority is `label_of(q)`: every `dissent_every`-th
    question gets one dissenting answer, so agreement is high but not perfect."""
    rows = []
    for i, q in enumerate(questions):
        target = label_of(q)
        if target is None:
            continue
        others = [c for c in q.choices if c != target]
        for j, annotator in enumerate(raters):
            choice = others[0] if (dissent_every and i % dissent_every == 0 and j == len(raters) - 1) else target
            rows.append(Answer(campaign=campaign, question=q, annotator=annotator, choice=choice,
                               time_ms=1500 + 10 * j))
    Answer.objects.bulk_create(rows, batch_size=5000)
    return len(rows)


def campaign_with_questions(owner: User, spec: dict[str, Any]) -> tuple[Campaign, list[Question]]:
    campaign = campaign_create(owner=owner, spec=spec)
    images = make_images(campaign)
    return campaign, make_questions(campaign, images)
