"""Blinding for old campaigns (issue 22, defect 13): example families stored as `person:intervention`
are migrated to `person:paired` (annotation migration 0011), an old archive's are mapped on import, and
no annotator-facing list names the intervention setting."""
from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps

from annotation.families import canonical_example_family
from annotation.models import ExampleImage
from annotation.selectors import examples_list
from tests.builders.metrics import SMALL_PST, campaign_with_questions

migration = importlib.import_module("annotation.migrations.0011_example_family_shown_as")


def test_canonical_example_family() -> None:
    assert canonical_example_family("person:intervention") == "person:paired"
    for key in ("person:paired", "person:single", "attribute:dress", "attribute:intervention", "person"):
        assert canonical_example_family(key) == key


@pytest.mark.django_db
def test_old_intervention_examples_move_to_paired(researcher: Any) -> None:
    campaign, questions = campaign_with_questions(researcher, {**SMALL_PST, "name": "old-examples"})
    images = list(dict.fromkeys(q.image_id for q in questions))[:3]
    ExampleImage.objects.create(campaign=campaign, family="person:paired", image_id=images[0], answer="Feminine")
    ExampleImage.objects.create(campaign=campaign, family="person:intervention", image_id=images[0], answer="Feminine")
    moved = ExampleImage.objects.create(campaign=campaign, family="person:intervention", image_id=images[1],
                                        answer="Masculine", order=0)
    upload = ExampleImage.objects.create(campaign=campaign, family="person:intervention", file="a" * 64,
                                         web_file="b" * 64, answer="Cannot identify", order=1)
    single = ExampleImage.objects.create(campaign=campaign, family="person:single", image_id=images[2],
                                         answer="Masculine")
    migration.forward(apps, None)
    rows = {e.pk: (e.family, e.order) for e in ExampleImage.objects.filter(campaign=campaign)}
    assert len(rows) == 4  # the duplicate of the paired example is dropped
    assert rows[moved.pk] == ("person:paired", 1) and rows[upload.pk] == ("person:paired", 2)
    assert rows[single.pk] == ("person:single", 0)
    assert not ExampleImage.objects.filter(family="person:intervention").exists()
    migration.forward(apps, None)  # idempotent
    assert ExampleImage.objects.filter(campaign=campaign).count() == 4
    # A row written after the migration (an old archive restored by hand) is still shown as paired.
    ExampleImage.objects.filter(pk=upload.pk).update(family="person:intervention")
    assert {e["family"] for e in examples_list(campaign=campaign)} == {"person:paired", "person:single"}
