"""The `import` labeller: machine labels made elsewhere, uploaded as CSV (header row) or JSON Lines.

Columns / keys: `image` (an image id of the campaign) or `prompt_key` + `sample_index`; the question
within the image by `slot`, `attribute` (GEP) or `family` ("person" / "attribute:<name>"); optional
`labeller` (must equal the upload's labeller); `choice` (one of the question's choices, case as
listed); optional `score` in [0, 1]; optional `model`; optional `clipscore`, the image's CLIPScore
against its prompt (2.5 * max(cos, 0), in [0, 2.5], computed elsewhere: the report's `clipscore`
section reads it as it reads the CLIP labellers' own; every row of one image gives the same value or
none). Every row is validated first and every problem
names its line (`rows.<line>`); then all rows are stored in one transaction, or none. A row for a
question the labeller already labelled replaces that label (a re-upload is idempotent)."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from django.db import transaction

from annotation.families import attribute_family
from annotation.models import Question
from annotation.services.derived import revision_bump
from campaigns.models import Campaign
from common.errors import ApplicationError
from common.inputs import BodyError, brief
from common.numbers import number
from common.uploads import upload_rows

from .models import AutolabelJob, ImageClipScore, MachineLabel

COLUMNS = ("image", "prompt_key", "sample_index", "family", "attribute", "slot", "labeller", "choice", "score",
           "model", "clipscore")
CLIPSCORE_MAX = 2.5  # 2.5 * max(cos, 0): Hessel et al. 2021, as autolabel/labellers/clip.py stores it
MAX_ROWS = 200_000
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
RESERVED = {"human", "hybrid"}


def labeller_name_check(name: Any) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name) or name in RESERVED:
        raise ApplicationError("Give the labeller's name.", errors={"labeller": [
            "must be 1-64 letters, digits, '_', '.' or '-' (not 'human' or 'hybrid')"]})
    return name


def _rows(name: str, data: bytes | BinaryIO, errors: dict[str, list[str]]) -> Iterator[tuple[int, dict[str, Any]]]:
    return upload_rows(name, data, errors, columns=COLUMNS, columns_hint=f"columns: {', '.join(COLUMNS)}",
                       empty_field="file", json_keys_checked=True, stop_on_unknown_columns=True)


def _int(value: Any, field: str) -> int | None:
    """An id or sample index (common.numbers: short text, finite, bounded), or None."""
    try:
        return number(value, field=field, kind="int", minimum=0, maximum=2**63 - 1)
    except BodyError:
        return None


def _row_question(row: dict[str, Any], questions: dict[int, list[Question]], by_key: dict[tuple[str, int], int],
                  problems: list[str]) -> tuple[int | None, Question | None]:
    """The image and the one question a row names (by image or prompt key and sample, then slot /
    attribute / family); None for either with the reason added to `problems`."""
    image_id = None
    if "image" in row:
        image_id = _int(row["image"], "image")
        if image_id is None or image_id not in questions:
            problems.append(f"image {brief(row['image'])} is not an image of this campaign with questions")
            image_id = None
    elif "prompt_key" in row and "sample_index" in row:
        sample = _int(row["sample_index"], "sample_index")
        image_id = by_key.get((str(row["prompt_key"]), sample)) if sample is not None else None
        if image_id is None:
            problems.append(f"no image {brief(row['prompt_key'])} sample {brief(row['sample_index'])}")
        elif image_id not in questions:
            problems.append(f"image {image_id} has no questions (open the campaign first, or it is excluded)")
            image_id = None
    else:
        problems.append("give image, or prompt_key and sample_index")
    question = None
    if image_id is not None:
        candidates = questions[image_id]
        if "slot" in row:
            candidates = [q for q in candidates if q.slot == str(row["slot"])]
        if "attribute" in row:
            candidates = [q for q in candidates if q.family == attribute_family(str(row["attribute"]))]
        if "family" in row:
            candidates = [q for q in candidates if q.family == str(row["family"])]
        if len(candidates) == 1:
            question = candidates[0]
        elif not candidates:
            problems.append("no question of this image matches slot / attribute / family")
        else:
            problems.append(f"{len(candidates)} questions of this image match: give slot (e.g. left / right)")
    return image_id, question


def machine_labels_import(*, campaign: Campaign, labeller: Any, name: str, data: bytes | BinaryIO) -> dict[str, Any]:
    """Validate every row, then upsert all labels in one transaction; 400 naming rows otherwise."""
    labeller = labeller_name_check(labeller)
    errors: dict[str, list[str]] = {}
    questions: dict[int, list[Question]] = {}
    for q in Question.objects.filter(campaign=campaign, is_gold=False).only("id", "image_id", "slot", "family", "choices"):
        questions.setdefault(q.image_id, []).append(q)
    by_key = {(k, n): i for i, k, n in campaign.images.values_list("id", "prompt__key", "sample_index")}
    seen: dict[int, int] = {}
    clip: dict[int, tuple[float, str, int]] = {}  # image -> (CLIPScore, model, first row)
    labels: list[MachineLabel] = []
    count = 0
    for line, row in _rows(name, data, errors):
        count += 1
        if count > MAX_ROWS:
            errors.setdefault("file", []).append(f"more than {MAX_ROWS:,} rows: split the file")
            break
        problems: list[str] = []
        image_id, question = _row_question(row, questions, by_key, problems)
        if row.get("labeller") not in (None, labeller):
            problems.append(f"labeller {brief(row['labeller'])} is not the upload's labeller {labeller!r}")
        choice = row.get("choice")
        if choice is None:
            problems.append("choice is missing")
        elif question is not None and choice not in question.choices:
            problems.append(f"choice {brief(choice)} is not one of {', '.join(question.choices)}")
        score = row.get("score")
        if score is not None:
            try:  # common.numbers: finite, in [0, 1]
                score = number(score, field="score", kind="float", minimum=0, maximum=1)
            except BodyError:
                problems.append(f"score {brief(row.get('score'))} must be a number in [0, 1]")
        model = row.get("model", "")
        if not isinstance(model, str) or len(model) > 300:
            problems.append("model must be text of at most 300 characters")
        clipscore = row.get("clipscore")
        if clipscore is not None:
            try:  # common.numbers: finite, in [0, 2.5]
                clipscore = number(clipscore, field="clipscore", kind="float", minimum=0, maximum=CLIPSCORE_MAX)
            except BodyError:
                problems.append(f"clipscore {brief(row.get('clipscore'))} must be a number in [0, {CLIPSCORE_MAX}]")
                clipscore = None
            if clipscore is not None and image_id is not None:
                first = clip.setdefault(image_id, (clipscore, model if isinstance(model, str) else "", line))
                if first[0] != clipscore:
                    problems.append(f"clipscore {clipscore} differs from row {first[2]}'s for the same image")
        if question is not None and question.pk in seen:
            problems.append(f"the same question as row {seen[question.pk]}")
        if problems:
            errors.setdefault(f"rows.{line}", []).extend(f"row {line}: {p}" for p in problems)
            continue
        assert question is not None and choice is not None  # both checked above (a problem otherwise)
        seen[question.pk] = line
        labels.append(MachineLabel(campaign=campaign, question=question, labeller=labeller, choice=choice,
                                   score=score, model=model, params={"import": name[:200], "row": line}))
    if not errors and not labels:
        errors["file"] = ["the file has no rows"]
    if errors:
        bad = sum(1 for k in errors if k.startswith("rows."))
        raise ApplicationError(f"Import rejected ({bad} bad rows of {count}); nothing was stored.", errors=errors)
    with transaction.atomic():
        MachineLabel.objects.bulk_create(labels, batch_size=2000, update_conflicts=True,
                                         unique_fields=["question", "labeller"],
                                         update_fields=["choice", "score", "model", "revision", "params"])
        # The labeller's progress row (progress.autolabel.<labeller>): a run of the same name keeps its
        # status and total; otherwise the row says "imported".
        job, _ = AutolabelJob.objects.select_for_update().get_or_create(
            campaign=campaign, labeller=labeller, defaults={"status": AutolabelJob.Status.IMPORTED})
        stored = MachineLabel.objects.filter(campaign=campaign, labeller=labeller).count()
        job.done = stored
        if job.status != AutolabelJob.Status.RUNNING:
            job.status, job.total = AutolabelJob.Status.IMPORTED, max(stored, job.total)
        job.save()
        if clip:  # one CLIPScore per image and model, replaced on a re-upload
            ImageClipScore.objects.bulk_create(
                [ImageClipScore(campaign=campaign, image_id=i, model=m or labeller, score=v) for i, (v, m, _) in clip.items()],
                update_conflicts=True, unique_fields=["image", "model"], update_fields=["score"])
        revision_bump(campaign_ids=[campaign.pk])  # machine and hybrid reports read these labels
    return {"rows": len(labels), "labeller": labeller}
