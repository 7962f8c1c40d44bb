"""Example images of a campaign's instructions (issue 17): per example family (a PST setting, a GEP
attribute) up to EXAMPLES_PER_FAMILY images with their correct answer and an optional caption, as
the papers showed their annotators (GEP: 5 positive and 5 negative per attribute). An example is a
campaign image (its questions are then never asked: both HIT engines leave images that are examples
out of the pool) or an uploaded file, checked like an imported image (size, Pillow decode,
decompression bombs) and stored content-addressed without metadata (generation.storage)."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from campaigns.models import Campaign
from common.errors import ApplicationError, NotFoundError
from common.inputs import BodyError
from common.numbers import number
from generation.importer import image_bytes_check
from generation.models import Image
from generation.storage import image_store

from ..families import design_example_families, family_choices
from ..models import ExampleImage
from .derived import revision_bump

EXAMPLES_PER_FAMILY = 10
CAPTION_MAX = 300


def _upload_bytes(upload: Any, errors: dict[str, list[str]]) -> bytes | None:
    limit = settings.IMPORT_MAX_FILE_BYTES
    data = upload.read(limit + 1)
    why = image_bytes_check(data, limit)
    if why:
        errors["file"] = [why]
        return None
    return data


@transaction.atomic
def example_add(*, campaign: Campaign, family: Any, answer: Any, caption: Any = "", image: Any = None,
                upload: Any = None) -> ExampleImage:
    """Add an example to a family. 400 naming the field: `family` (not one of the campaign's, or
    already EXAMPLES_PER_FAMILY examples), `answer` (not one of the family's choices), `image` (not a
    finished image of this campaign, already an example of the family, or given with a file),
    `file` (not an acceptable image), `caption` (too long). Locks the campaign row: concurrent adds
    to one family are serialised, so the limit holds."""
    Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
    errors: dict[str, list[str]] = {}
    families = design_example_families(campaign.kind, campaign.spec)
    if not isinstance(family, str) or family not in families:
        errors["family"] = [f"must be one of this campaign's families: {', '.join(families)}"]
    elif ExampleImage.objects.filter(campaign=campaign, family=family).count() >= EXAMPLES_PER_FAMILY:
        errors["family"] = [f"already has {EXAMPLES_PER_FAMILY} examples, the most a family may have"]
    if isinstance(family, str) and family in families and answer not in family_choices(family):
        errors["answer"] = [f"must be one of {family_choices(family)}"]
    caption = "" if caption is None else caption
    if not isinstance(caption, str) or len(caption) > CAPTION_MAX:
        errors["caption"] = [f"must be a text of at most {CAPTION_MAX} characters"]
    image_row = None
    if (image in (None, "")) == (upload is None):
        errors["image"] = ["give either an image of this campaign or an uploaded file"]
    elif upload is None:
        try:
            image_id = None if isinstance(image, bool) else number(image, field="image", kind="int", minimum=1,
                                                                   maximum=2**63 - 1)
        except BodyError:
            image_id = None
        image_row = Image.objects.filter(pk=image_id, campaign=campaign, status=Image.Status.DONE).first() \
            if image_id is not None and not isinstance(image, bool) else None
        if image_row is None:
            errors["image"] = ["not a finished image of this campaign"]
        elif "family" not in errors and ExampleImage.objects.filter(family=family, image=image_row).exists():
            errors["image"] = ["is already an example of this family"]
    data = _upload_bytes(upload, errors) if upload is not None else None
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid example: {first}: {errors[first][0]}", errors=errors)
    order = ExampleImage.objects.filter(campaign=campaign, family=family).count()
    example = ExampleImage(campaign=campaign, family=family, answer=answer, caption=caption.strip(), order=order,
                           image=image_row)
    if data is not None:
        stored = image_store(data)
        example.file, example.web_file = stored.file, stored.web_file
    try:
        with transaction.atomic():
            example.save()
    except IntegrityError as exc:  # the same image twice in a family, past a concurrent check
        raise ApplicationError("Invalid example: image: is already an example of this family",
                               errors={"image": ["is already an example of this family"]}) from exc
    revision_bump(campaign_ids=[campaign.pk])
    return example


@transaction.atomic
def example_delete(*, campaign: Campaign, example_id: int) -> None:
    """Remove an example (its image's questions go back into the pool); 404 when not the campaign's."""
    deleted, _ = ExampleImage.objects.filter(campaign=campaign, pk=example_id).delete()
    if not deleted:
        raise NotFoundError(f"Example {example_id} not found.")
    revision_bump(campaign_ids=[campaign.pk])
