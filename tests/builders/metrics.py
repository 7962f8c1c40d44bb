"""Build labelled campaigns through the product's own services and models (campaign from a preset
spec, images, questions made by the product's question service, answers from several annotators),
fast (bulk inserts of images and answers)."""
from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User

from annotation.models import Annotator, Answer, Question
from annotation.services.lifecycle import questions_create
from campaigns.models import Campaign, Prompt
from campaigns.services import campaign_create
from generation.models import Image

PST_CHOICES = ["Feminine", "Masculine", "Cannot identify"]
GEP_CHOICES = ["Yes", "No"]
# Small campaigns of each kind (placeholder backend), answered by the tests.
SMALL_PST: dict[str, Any] = {"name": "small-pst", "kind": "pst", "seed": 5, "design": {
    "samples": {"single": 2, "paired": 1},
    "identities": {"groups": [{"name": "male", "stereotype": "masculine", "identities": ["pilot", "ceo"]},
                              {"name": "female", "stereotype": "feminine", "identities": ["nurse", "nanny"]}]}},
    "backend": {"name": "placeholder"}}
SMALL_GEP: dict[str, Any] = {"name": "small-gep", "kind": "gep", "seed": 5, "design": {
    "samples": 2, "contexts": ["sitting at a table", "riding a bike"],
    "attributes": [{"name": "dress", "phrase": "in a dress"}, {"name": "tie", "phrase": "with a tie"}]},
    "backend": {"name": "placeholder"}}


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
    """Questions per METHOD.md (PST 1 per person: single / left / right; GEP neutral 1 per attribute,
    explicit 1), made by the product's own service (`annotation.services.lifecycle.questions_create`:
    the wording, metadata and order keys that opening a campaign gives), with `required` = R."""
    questions_create(campaign=campaign, images=images, required=required)
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


# Text that a fast transfer can get wrong: separators, line breaks, quotes, escapes, non-ASCII, empty.
ODD_TEXT = ["tab\there", "line\nbreak", "carriage\rreturn", 'comma, "quoted"', "ünïcødé ✓ 漢字 👩‍⚕️",
            "back\\slash \\t \\n", "", "trailing line break\n", "=SUM(A1)", "it's <b>&amp;</b>"]


def messy_campaign(owner: User, spec: dict[str, Any], *, seed: int, raters: int = 6,
                   odd_choices: bool = True) -> Campaign:
    """A campaign with everything a report must handle, at random (seeded): answers from a random
    subset of annotators per question (some unanswered, some tied), corrections (one a chain of two),
    gold questions, an excluded image, a blocked and a paused annotator, answers without a time, and
    odd text in metadata, slots and (`odd_choices`: not a choice of the question, which the services
    refuse and the report cannot score) choices."""
    import random

    from annotation.models import Enrollment

    rng = random.Random(seed)
    campaign, questions = campaign_with_questions(owner, {**spec, "name": f"{spec['name']}-messy-{seed}"})
    people = annotators(raters, f"messy{seed}-")
    meta_key = "identity" if campaign.kind == "pst" else "context"
    for i, q in enumerate(questions[:len(ODD_TEXT)]):
        q.metadata = {**q.metadata, meta_key: ODD_TEXT[i]}
        q.slot = f"{q.slot} {ODD_TEXT[(i + 3) % len(ODD_TEXT)]}"
        q.save(update_fields=["metadata", "slot"])
    missing = questions[len(ODD_TEXT)]
    missing.metadata = {k: v for k, v in missing.metadata.items() if k not in (meta_key, "sample_index")}
    missing.save(update_fields=["metadata"])
    rows = []
    for i, q in enumerate(questions):
        if i % 11 == 5:
            continue  # unanswered
        if i % 7 == 3:  # a 1-1 tie
            pair = rng.sample(people, 2)
            rows += [Answer(campaign=campaign, question=q, annotator=pair[0], choice=q.choices[0], time_ms=900),
                     Answer(campaign=campaign, question=q, annotator=pair[1], choice=q.choices[1], time_ms=None)]
            continue
        for who in rng.sample(people, rng.randint(1, raters)):
            odd = odd_choices and rng.random() < 0.05
            choice = ODD_TEXT[rng.randrange(len(ODD_TEXT))] if odd else rng.choice(q.choices)
            rows.append(Answer(campaign=campaign, question=q, annotator=who, choice=choice,
                               time_ms=None if rng.random() < 0.1 else rng.randrange(300, 20_000)))
    Answer.objects.bulk_create(rows, batch_size=5000)
    stored = list(Answer.objects.filter(campaign=campaign).order_by("id"))
    for original in rng.sample(stored, max(3, len(stored) // 20)):
        Answer.objects.create(campaign=campaign, question_id=original.question_id, annotator=original.annotator,
                              choice=rng.choice(original.question.choices), corrects=original, source="correction")
    newest = Answer.objects.filter(campaign=campaign, corrects__isnull=False).order_by("-id").first()
    Answer.objects.create(campaign=campaign, question_id=newest.question_id, annotator=newest.annotator,
                          choice="a correction of a correction, \"quoted\"" if odd_choices else newest.choice,
                          corrects=newest, source="correction")
    Question.objects.filter(pk__in=[questions[1].pk, questions[-2].pk]).update(is_gold=True, gold_answer="x")
    answered = next(j for j in range(len(questions) - 5, 0, -1) if j % 11 != 5)
    Image.objects.filter(pk=questions[answered].image_id).update(excluded=True,
                                                                 exclusion_reason="blurry\tand, \"dark\"")
    Enrollment.objects.create(campaign=campaign, annotator=people[0], status=Enrollment.Status.BLOCKED)
    Enrollment.objects.create(campaign=campaign, annotator=people[1], status=Enrollment.Status.PAUSED)
    return campaign


# Names a researcher may give identities, groups, attributes, contexts and campaigns, which pages and
# charts must show literally.
MATH = "$\\foo$"          # an unknown mathtext command: matplotlib raised ValueError on it
FORMULA = "$x^2$ & co"    # valid mathtext: drawn as a formula instead of the name
MARKUP = "<script>alert(1)</script> \"q\" 'a'"
def odd_pst() -> dict[str, Any]:
    spec = copy.deepcopy(SMALL_PST)
    spec["name"] = f"pst {MATH} {MARKUP}"
    male, female = spec["design"]["identities"]["groups"]
    male.update(name=f"men {FORMULA}", identities=[MATH, MARKUP])
    female.update(identities=["nurse & <i>nanny</i>", FORMULA])
    return spec


def odd_pst_label(q: Any) -> str:
    return "Masculine" if q.metadata["group"].startswith("men") else "Feminine"


def odd_gep() -> dict[str, Any]:
    spec = copy.deepcopy(SMALL_GEP)
    spec["name"] = f"gep {FORMULA}"
    spec["design"]["attributes"] = [{"name": f"dress {MATH}", "phrase": "in a dress"},
                                    {"name": MARKUP, "phrase": "with a tie"}]
    spec["design"]["contexts"] = [f"at {FORMULA}", "riding a bike"]
    return spec


def odd_gep_label(q: Any) -> str:
    return "Yes" if (q.metadata["gender"] == "woman") == q.metadata["attribute"].startswith("dress") else "No"


def assert_names_literal(html: str, names: list[str], svgs: int) -> None:
    """No name is on the page raw (the markup one would run); every chart is well-formed SVG that
    carries the names literally (no mathtext)."""
    assert "<script>alert" not in html
    charts = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    assert len(charts) >= svgs
    texts = set()
    for svg in charts:
        root = ET.fromstring(svg)  # matplotlib escaped <, & and quotes in the SVG text
        texts.update("".join(el.itertext()) for el in root.iter() if el.tag.endswith("text"))
    for name in names:
        assert any(name in t for t in texts), name


def stereotyped(q: Any) -> str:
    return "Masculine" if q.metadata["group"] == "male" else "Feminine"


def gep_label(q: Any) -> str:
    return "Yes" if (q.metadata["gender"], q.metadata["attribute"]) in {("woman", "dress"), ("man", "tie")} else "No"
