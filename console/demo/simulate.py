"""A complete, synthetic audit through the product's own services: placeholder images generated in
this process (Celery eager), campaigns opened for annotation, simulated annotators who consent, take
HITs from the HIT engine and submit answers (with demographics), examples with answers, and the
machine labels of a simulated labeller uploaded as an `import` (its error rate stated).

The simulation is seeded: the same demo every time. A simulated image shows the stereotyped gender
with the probability of its model (specs.MODEL_BIAS), sometimes no identifiable person; a simulated
annotator reports what the image shows with 85 % accuracy (otherwise another choice at random), so
agreement is high but not perfect, with some disagreements and three-way ties."""
from __future__ import annotations

import io
import logging
import random
from typing import Any

from django.db.models import F

from annotation.demographics import AGE_BANDS
from annotation.families import example_family
from annotation.hits import answers_submit, assignment_next
from annotation.models import Annotator, Question
from annotation.services.annotators import annotator_create, enrollment_consent
from annotation.services.demographics import demographics_release_cut, demographics_submit
from annotation.services.examples import example_add
from annotation.services.lifecycle import questions_open
from annotation.spec_section import annotation_settings
from autolabel.importer import machine_labels_import
from campaigns.models import Campaign
from campaigns.spec import GEP, PST
from common.csvsafe import csv_writer
from generation.models import Image
from generation.services import generation_start

from .specs import (
    DEMO_ANNOTATOR,
    LABELLER,
    LABELLER_FLIP,
    MODEL_BIAS,
    SIMULATED_ANNOTATORS,
    SIMULATED_PREFIX,
)

ACCURACY = 0.85          # a simulated annotator's chance of reporting what the image shows
CANNOT = "Cannot identify"
# GEP: the simulated model shows these attributes more often for one gender.
FEMININE = {"dress", "skirt", "slippers"}
MASCULINE = {"suit", "tie", "boots", "slacks"}
_YOUNGER = {0, 1, 4, 7, 8}  # the simulated annotators (by index) in the younger of the two age bands
ANSWERED_SHARE = 0.8     # the simulated annotators answer this share of the open questions; the rest wait


def images_generate(campaign: Campaign) -> int:
    """Generate the campaign's placeholder images now, in this process (what the worker would do)."""
    from celery import current_app

    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    trace = logging.getLogger("celery.app.trace")
    level = trace.level
    trace.setLevel(logging.WARNING)  # one "succeeded" line per batch otherwise
    try:
        generation_start(campaign=campaign)
    finally:
        current_app.conf.task_always_eager = eager
        trace.setLevel(level)
    campaign.refresh_from_db()
    return Image.objects.filter(campaign=campaign, status=Image.Status.DONE).count()


def truth(question: Question, campaign: Campaign, rng: random.Random) -> str:
    """What the simulated image shows for this question (seeded per question)."""
    local = random.Random(f"{campaign.seed}-{question.image_id}-{question.slot}")
    meta = question.metadata or {}
    if campaign.kind == PST:
        bias = MODEL_BIAS.get(campaign.name, {}).get(question.setting, 0.6)
        if local.random() < 0.06:
            return CANNOT
        stereotyped = "Masculine" if meta.get("group") == "male-dominated" else "Feminine"
        other = "Feminine" if stereotyped == "Masculine" else "Masculine"
        return stereotyped if local.random() < bias else other
    # GEP: attributes of a stereotyped kind show up more often for one gender.
    attribute = str(meta.get("attribute", ""))
    woman = meta.get("gender") in ("woman", "female", "a woman")
    if attribute in FEMININE:
        shown = 0.45 if woman else 0.08
    elif attribute in MASCULINE:
        shown = 0.10 if woman else 0.45
    else:
        shown = 0.25
    return "Yes" if local.random() < shown else "No"


def annotators_simulated(campaigns: list[Campaign]) -> list[Annotator]:
    """The simulated annotators, consented to every demo campaign (idempotent)."""
    out = []
    for i in range(SIMULATED_ANNOTATORS):
        username = f"{SIMULATED_PREFIX}{i + 1:02d}"
        annotator = Annotator.objects.filter(user__username=username).first()
        if annotator is None:
            annotator, _ = annotator_create(username=username, password=f"{username}-Not-a-person-7", consent=True)
        for campaign in campaigns:
            enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
        out.append(annotator)
    return out


def demo_annotator(campaigns: list[Campaign]) -> Annotator:
    """The account a person logs in with to try the task page (consented, no answers)."""
    annotator = Annotator.objects.filter(user__username=DEMO_ANNOTATOR["username"]).first()
    if annotator is None:
        annotator, _ = annotator_create(username=DEMO_ANNOTATOR["username"], password=DEMO_ANNOTATOR["password"],
                                        consent=True)
    for campaign in campaigns:
        enrollment_consent(annotator=annotator, campaign=campaign, consent=True)
    return annotator


def demographics_simulated(campaign: Campaign, people: list[Annotator]) -> int:
    """Half women, half men, two age bands, two countries: every reported group has >= 5 people."""
    cfg = annotation_settings(campaign)["demographics"]
    if not cfg["ask"]:
        return 0
    bands = [b for b in AGE_BANDS if b != "prefer_not_to_say"]
    for i, annotator in enumerate(people):
        # Two age bands of 5 each, crossed with gender and country (a group under 5 is merged away).
        demographics_submit(annotator=annotator, campaign=campaign, consent=True,
                            consent_version=cfg["consent_version"],
                            answers={"gender": "woman" if i % 2 == 0 else "man",
                                     "age_band": bands[1 if i in _YOUNGER else 2],
                                     "country": "US" if i < len(people) // 2 else "DE"})
    return len(people)


def answers_simulated(campaign: Campaign, people: list[Annotator], rng: random.Random) -> int:
    """The simulated annotators take HITs in turn and answer them, until ANSWERED_SHARE of the open
    questions have all their answers (or nothing is left). Returns the number of answers."""
    open_questions = Question.objects.filter(campaign=campaign, is_gold=False, required__gt=0).count()
    target = int(ANSWERED_SHARE * open_questions)
    total, idle = 0, 0
    while idle < len(people):
        idle = 0
        for annotator in people:
            done = Question.objects.filter(campaign=campaign, is_gold=False, required__gt=0,
                                           completed__gte=F("required")).count()
            if done >= target:
                return total
            hit, _created = assignment_next(annotator=annotator, campaign_id=campaign.pk, rng=rng)
            if hit is None:
                idle += 1
                continue
            answers = []
            for q in hit["questions"]:
                question = Question.objects.get(pk=q["id"])
                shown = truth(question, campaign, rng)
                choice = shown if rng.random() < ACCURACY else rng.choice([c for c in q["choices"] if c != shown])
                answers.append({"question": q["id"], "choice": choice, "time_ms": rng.randint(2500, 9000)})
            answers_submit(annotator=annotator, assignment_id=hit["id"], answers=answers)
            total += len(answers)
    return total


def examples_add(campaign: Campaign) -> int:
    """Two examples with their answers for each of the first three example families, from the
    campaign's own images (idempotent)."""
    from annotation.models import ExampleImage

    if ExampleImage.objects.filter(campaign=campaign).exists():
        return 0
    chosen: dict[str, list[tuple[int, str]]] = {}
    for q in Question.objects.filter(campaign=campaign, is_gold=False).order_by("pk")[:400]:
        family = example_family(q.family, q.setting)
        picked = chosen.setdefault(family, [])
        answer = truth(q, campaign, random.Random(0))
        if answer == CANNOT or len(picked) >= 2 or any(a == answer or i == q.image_id for i, a in picked):
            continue
        picked.append((q.image_id, answer))
    added = 0
    for family in sorted(chosen)[:3]:
        for image_id, answer in chosen[family]:
            example_add(campaign=campaign, family=family, answer=answer, image=image_id,
                        caption=f"Synthetic example: the answer here is {answer}.")
            added += 1
    return added


def clipscore_simulated(image_id: int, campaign: Campaign) -> float:
    """A simulated CLIPScore (2.5 * cos) of a placeholder image against its prompt: cos drawn in
    [0.24, 0.34], the range of real text-image pairs (seeded per image)."""
    return round(2.5 * random.Random(f"{campaign.seed}-clip-{image_id}").uniform(0.24, 0.34), 4)


def machine_labels_simulated(campaign: Campaign) -> int:
    """Labels of a simulated labeller on every question, LABELLER_FLIP of them wrong at random,
    uploaded through the `import` labeller as a CSV, as a researcher would; for GEP also a simulated
    CLIPScore per image (the import's `clipscore` column), so the report's CLIPScore table has data."""
    rng = random.Random(f"{campaign.seed}-labeller")
    out = io.StringIO()
    writer = csv_writer(out)  # common/csvsafe.py: the one way the product writes CSV
    gep = campaign.kind == GEP
    writer.writerow(["image", "slot", "choice", "score", "model", *(["clipscore"] if gep else [])])
    model = f"simulated labeller ({int(LABELLER_FLIP * 100)}% of labels flipped at random)"
    for q in Question.objects.filter(campaign=campaign, is_gold=False).order_by("pk"):
        shown = truth(q, campaign, rng)
        choice = shown if rng.random() >= LABELLER_FLIP else rng.choice([c for c in q.choices if c != shown])
        first = 1.0 if choice == q.choices[0] else 0.0
        writer.writerow([q.image_id, q.slot, choice, f"{min(1.0, 0.55 * first + 0.45 * rng.random()):.3f}", model,
                         *([clipscore_simulated(q.image_id, campaign)] if gep else [])])
    result = machine_labels_import(campaign=campaign, labeller=LABELLER, name="sim_labels.csv",
                                   data=out.getvalue().encode())
    return int(result["rows"])


def audit_simulate(campaigns: list[Campaign], *, seed: int = 2026) -> dict[str, Any]:
    """Generate, open, answer, label: the demo's complete audit. Idempotent: a campaign that already
    has answers is left as it is."""
    rng = random.Random(seed)
    summary: dict[str, Any] = {}
    for campaign in campaigns:
        if campaign.status in (Campaign.Status.DRAFT, Campaign.Status.GENERATING):
            images_generate(campaign)
            campaign.refresh_from_db()
        if campaign.status == Campaign.Status.GENERATED:
            questions_open(campaign=campaign)
            campaign.refresh_from_db()
    people = annotators_simulated(campaigns)
    demo_annotator(campaigns)
    for campaign in campaigns:
        if campaign.answers.exists():
            summary[campaign.name] = {"answers": campaign.answers.count(), "already": True}
            continue
        examples = examples_add(campaign)
        demographics_simulated(campaign, people)
        answers = answers_simulated(campaign, people, rng)
        # The first numbered demographics release (the release rule, docs/security.md): the report's
        # annotators section and the researcher's aggregates read only releases.
        # (reason: at most 16 characters, the model's field; PostgreSQL enforces it, SQLite does not)
        demographics_release_cut(campaign=campaign, reason="demo")
        labels = machine_labels_simulated(campaign)
        summary[campaign.name] = {"answers": answers, "examples": examples, "machine_labels": labels}
    return summary
