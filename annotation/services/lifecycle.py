"""A campaign's life in annotation: opening it (questions from images), pause / resume / close, and
the researcher's tools on the question pool (redundancy R for a subset, gold questions)."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Value
from django.db.models.functions import Greatest

from campaigns.models import Campaign
from campaigns.registry import question_gates
from campaigns.services import campaign_status_set
from campaigns.spec import derive_seed
from common.errors import ApplicationError, ConflictError
from common.templates import template_fill
from generation.models import Image

from ..families import PERSON, attribute_family
from ..models import Question
from ..redundancy import initial_required
from ..selectors import questions_filter
from ..spec_section import ATTRIBUTE_CHOICES, PERSON_CHOICES, annotation_settings
from .demographics import demographics_release_at_close
from .derived import answers_derive, revision_bump
from .open_claims import opening_running

# Gold questions are shown to every annotator once: "unlimited" redundancy, and their counters are
# never touched (hot rows under contention otherwise).
GOLD_REQUIRED = 32767
MAX_REQUIRED = 50
OPEN_BATCH = 20_000  # questions per bulk_create call while opening (progress between them)
PERSON_FAMILY = PERSON


def _person_metadata(person: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("identity", "group", "position", "stereotype", "occupation", "role")
    return {k: person[k] for k in keys if k in person}


def _questions_for_image(campaign: Campaign, image: Image, cfg: Mapping[str, Any],
                         phrases: Mapping[str, str]) -> list[Question]:
    prompt = image.prompt
    base = {"setting": prompt.setting, "prompt_key": prompt.key, "sample_index": image.sample_index}
    if "template_index" in prompt.metadata:  # a setting with several prompt templates (docs/spec.md)
        base["template_index"] = prompt.metadata["template_index"]
    out: list[Question] = []
    if campaign.kind == Campaign.Kind.PST:
        # One order key per image, so the persons of a paired image sit next to each other in the pool.
        order_key = derive_seed(campaign.seed, "order", prompt.key, image.sample_index)
        for person in prompt.metadata.get("persons", []):
            slot = person.get("position", "single")
            template = cfg["questions"].get(slot, cfg["questions"]["single"])
            out.append(Question(
                campaign=campaign, image=image, slot=slot, family=PERSON_FAMILY, setting=prompt.setting,
                text=template_fill(template, identity=person["identity"], phrase=""), choices=list(PERSON_CHOICES),
                metadata={**base, **_person_metadata(person)}, required=initial_required(cfg["redundancy"]), order_key=order_key))
        return out
    meta = prompt.metadata
    names = [meta["attribute"]] if meta.get("attribute") else list(phrases)
    for name in names:
        out.append(Question(
            campaign=campaign, image=image, slot=name, family=attribute_family(name), setting=prompt.setting,
            text=template_fill(cfg["questions"]["attribute"], phrase=phrases.get(name, name), identity=""),
            choices=list(ATTRIBUTE_CHOICES),
            metadata={**base, "gender": meta.get("gender"), "attribute": name, "context": meta.get("context")},
            required=initial_required(cfg["redundancy"]),
            order_key=derive_seed(campaign.seed, "order", prompt.key, image.sample_index, name)))
    return out


def attribute_phrases(campaign: Campaign) -> dict[str, str]:
    """{attribute name: phrase} of a GEP campaign's design (empty for PST)."""
    design = campaign.spec.get("design", {}) if isinstance(campaign.spec, Mapping) else {}
    return {a["name"]: a.get("phrase", a["name"]) for a in design.get("attributes", []) if isinstance(a, Mapping)}


def question_families(campaign: Campaign) -> list[str]:
    """The question families a campaign's questions fall into (`person`, or `attribute:<name>`): what a
    qualification test attaches to. Not the example families (`annotation.families.design_example_families`)."""
    if campaign.kind == Campaign.Kind.PST:
        return [PERSON_FAMILY]
    return [attribute_family(name) for name in attribute_phrases(campaign)]


@transaction.atomic
def questions_open(*, campaign: Campaign, progress: Callable[[float], None] | None = None) -> dict[str, int]:
    """Create the questions of every generated image (status done, not excluded) that has none yet,
    and set the campaign open. Idempotent: re-opening after more images were generated adds only the
    missing questions (unique (image, slot) backs this up). Order keys derive from the campaign seed.
    `progress` (0-1) is called as the steps pass (the worker of a large campaign: services/opening.py);
    a request goes through `campaign_open_request`, which decides from the estimate where it runs."""
    report = progress or (lambda fraction: None)
    if campaign.status == Campaign.Status.CLOSED:
        raise ConflictError("The campaign is closed; it cannot be opened again.")
    cfg = annotation_settings(campaign)
    phrases = attribute_phrases(campaign)
    images = list(Image.objects.filter(campaign=campaign, status=Image.Status.DONE, excluded=False)
                  .filter(~Exists(Question.objects.filter(image=OuterRef("pk"))))
                  .select_related("prompt").order_by("pk"))
    # Gates (campaigns.registry): e.g. the spec's autolabel.human_sample opens only a sample of the
    # images to humans; the others' questions get required = 0 (never offered in a HIT).
    open_ids: set[int] | None = None
    for gate in question_gates():
        allowed = gate(campaign, [image.pk for image in images])
        if allowed is not None:
            open_ids = allowed if open_ids is None else open_ids & allowed
    report(0.1)
    rows: list[Question] = []
    for n, image in enumerate(images, 1):
        if n % 2000 == 0:  # the opening worker's heartbeat (services/opening.py) through a long step
            report(0.1 + 0.2 * n / len(images))
        questions = _questions_for_image(campaign, image, cfg, phrases)
        if open_ids is not None and image.pk not in open_ids:
            for question in questions:
                question.required = 0
        rows.extend(questions)
    report(0.3)
    for start in range(0, len(rows), OPEN_BATCH):
        Question.objects.bulk_create(rows[start:start + OPEN_BATCH], batch_size=2000, ignore_conflicts=True)
        report(0.3 + 0.65 * min(1.0, (start + OPEN_BATCH) / len(rows)))
    with transaction.atomic():  # closed meanwhile (a lost worker's claim let a close through): stays closed
        current = Campaign.objects.select_for_update().only("status").get(pk=campaign.pk).status
        if current != Campaign.Status.CLOSED:
            campaign_status_set(campaign=campaign, status=Campaign.Status.OPEN)
    revision_bump(campaign_ids=[campaign.pk])
    total = Question.objects.filter(campaign=campaign, is_gold=False).count()
    return {"questions_created": len(rows), "questions": total}


@transaction.atomic
def questions_create(*, campaign: Campaign, images: Sequence[Image], required: int | None = None) -> int:
    """The questions of these images exactly as opening makes them (METHOD.md: PST one per person,
    GEP neutral one per attribute, explicit one; wording, metadata and order keys from the spec),
    without opening's gates or status change: for imports and builders of prepared data. `required`
    overrides the spec's redundancy. Idempotent (unique (image, slot)); moves the data revision.
    Returns how many questions were created."""
    cfg = annotation_settings(campaign)
    phrases = attribute_phrases(campaign)
    rows = [q for image in images for q in _questions_for_image(campaign, image, cfg, phrases)]
    if required is not None:
        for question in rows:
            question.required = required
    created = Question.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    revision_bump(campaign_ids=[campaign.pk])
    return len(created)


_TRANSITIONS = {
    "pause": ({Campaign.Status.OPEN}, Campaign.Status.PAUSED),
    "resume": ({Campaign.Status.PAUSED}, Campaign.Status.OPEN),
    "close": ({Campaign.Status.OPEN, Campaign.Status.PAUSED, Campaign.Status.GENERATED,
               Campaign.Status.GENERATING, Campaign.Status.DRAFT}, Campaign.Status.CLOSED),
}


@transaction.atomic
def campaign_annotation_transition(*, campaign: Campaign, action: str) -> Campaign:
    """pause (open -> paused: no new HITs; live HITs may still be submitted), resume, close."""
    allowed, target = _TRANSITIONS[action]
    if campaign.status == target:
        return campaign
    if campaign.status not in allowed:
        raise ConflictError(f"Cannot {action} a campaign that is {campaign.status}.",
                            errors={"status": [f"is {campaign.status}"]})
    if target == Campaign.Status.CLOSED:
        running = opening_running(campaign)
        if running is not None:  # its worker would set it open when done
            raise ConflictError(f"Cannot close the campaign while it is being opened. {running['detail']}",
                                errors={"status": ["being opened by a worker"]})
    campaign = campaign_status_set(campaign=campaign, status=target)
    if target == Campaign.Status.CLOSED:
        demographics_release_at_close(campaign=campaign)  # the release rule decides (docs/security.md)
    return campaign


@transaction.atomic
def questions_redundancy_set(*, campaign: Campaign, required: Any, question_ids: Any = None,
                             filters: Any = None) -> int:
    """Set R for a subset (question ids or a filter). Never below what is already assigned: the
    new `required` is max(required, assigned). Questions kept from humans by a gate (required 0: not
    in the spec's human sample) stay closed. Returns how many questions were updated."""
    if isinstance(required, bool) or not isinstance(required, int) or not 1 <= required <= MAX_REQUIRED:
        raise ApplicationError("required must be an integer from 1 to 50.",
                               errors={"required": [f"must be an integer from 1 to {MAX_REQUIRED}"]})
    if (question_ids is None) == (filters is None):
        raise ApplicationError("Give either questions (ids) or filter.", errors={"questions": ["or filter"]})
    qs = Question.objects.filter(campaign=campaign, is_gold=False, required__gt=0)
    if question_ids is not None:
        if not isinstance(question_ids, list) or not all(isinstance(i, int) for i in question_ids):
            raise ApplicationError("questions must be a list of ids.", errors={"questions": ["list of ids"]})
        known = set(qs.filter(pk__in=question_ids).values_list("pk", flat=True))
        unknown = [i for i in question_ids if i not in known]
        if unknown:
            raise ApplicationError(f"Unknown questions: {unknown[:10]}", errors={"questions": [f"unknown: {unknown[:10]}"]})
        qs = qs.filter(pk__in=question_ids)
    else:
        if not isinstance(filters, Mapping):
            raise ApplicationError("filter must be an object.", errors={"filter": ["must be an object"]})
        qs = questions_filter(qs, filters)
    changed = qs.update(required=Greatest(F("assigned"), Value(required)))
    revision_bump(campaign_ids=[campaign.pk])
    return changed


@transaction.atomic
def questions_gold_set(*, campaign: Campaign, items: Any) -> int:
    """Mark questions as gold with their known answer: [{"question": id, "answer": choice}]. Gold
    questions are mixed silently into HITs (rate `gold_rate`), shown to each annotator at most once,
    and left out of the aggregated labels."""
    if not isinstance(items, list) or not items:
        raise ApplicationError("items must be a non-empty list.", errors={"items": ["[{question, answer}]"]})
    ids = [it.get("question") for it in items if isinstance(it, Mapping)]
    questions = {q.pk: q for q in Question.objects.filter(campaign=campaign, pk__in=[i for i in ids if isinstance(i, int)])}
    errors: dict[str, list[str]] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or item.get("question") not in questions:
            errors[f"items.{index}.question"] = ["not a question of this campaign"]
            continue
        question = questions[item["question"]]
        if item.get("answer") not in question.choices:
            errors[f"items.{index}.answer"] = [f"must be one of {question.choices}"]
            continue
        question.is_gold, question.gold_answer, question.required = True, item["answer"], GOLD_REQUIRED
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid gold items: {first}: {errors[first][0]}", errors=errors)
    Question.objects.bulk_update(list(questions.values()), ["is_gold", "gold_answer", "required"])
    # Gold questions leave the labels; the data revision moves (reports count gold answers apart).
    answers_derive(campaign_id=campaign.pk, question_ids=list(questions))
    return len(questions)
