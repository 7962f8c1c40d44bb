"""An answer is corrected at most once, kept by a unique index over the corrections only (migration
0014): the rule holds at the database whatever writes the rows, original answers add no entry to that
index (issue 23: one index insertion fewer per answer a HIT or a bulk import writes), the lookup
"is this answer corrected?" still reads an index, and the migration goes back and forth."""
from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction

from annotation.models import Answer
from annotation.services.answers import answer_correct
from tests.builders.campaigns import make_annotator
from tests.builders.metrics import SMALL_PST, campaign_with_questions

migration = importlib.import_module("annotation.migrations.0014_answer_corrects_partial_unique")
pytestmark = pytest.mark.django_db


def _unique_indexes_on_corrects() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'annotation_answer' "
                       "AND indexdef LIKE 'CREATE UNIQUE INDEX%%' AND indexdef LIKE '%%(corrects_id)%%'")
        return [r[0] for r in cursor.fetchall()]


def _answers(researcher: Any, n: int) -> list[Answer]:
    campaign, questions = campaign_with_questions(researcher, {**SMALL_PST, "name": "corrections"})
    annotator, _ = make_annotator("ann", campaign=campaign)
    return [Answer.objects.create(campaign=campaign, question=q, annotator=annotator, choice="Feminine")
            for q in questions[:n]]


def test_one_partial_unique_index_over_the_corrections_only() -> None:
    (definition,) = _unique_indexes_on_corrects()
    assert "answer_corrected_at_most_once" in definition and "WHERE (corrects_id IS NOT NULL)" in definition


def test_a_second_correction_of_one_answer_is_refused_by_the_database(researcher: Any) -> None:
    first, other = _answers(researcher, 2)
    correction = answer_correct(answer_id=first.pk, choice="Masculine")
    assert correction.corrects_id == first.pk
    fields = {"campaign_id": first.campaign_id, "question_id": first.question_id, "annotator_id": first.annotator_id}
    with pytest.raises(IntegrityError), transaction.atomic():  # around the service: the index itself refuses
        Answer.objects.create(**fields, choice="Cannot identify", corrects=first)
    # Original answers (corrects NULL) never conflict with each other; a correction of another answer is fine.
    assert Answer.objects.filter(corrects__isnull=True).count() == 2
    assert answer_correct(answer_id=other.pk, choice="Masculine").corrects_id == other.pk
    # The reverse filter the selectors use still tells corrected answers from the rest.
    assert set(Answer.objects.filter(corrected_by__isnull=True).values_list("pk", flat=True)) == \
        set(Answer.objects.exclude(pk__in=[first.pk, other.pk]).values_list("pk", flat=True))


def test_original_answers_add_no_entry_and_the_lookup_reads_the_index(researcher: Any) -> None:
    first, *_ = _answers(researcher, 3)
    answer_correct(answer_id=first.pk, choice="Masculine")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM annotation_answer")
        assert cursor.fetchone()[0] == 4
        # The index holds the one correction: an index-only scan over it counts 1 of the 4 rows.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN SELECT 1 FROM annotation_answer WHERE corrects_id = %s", [first.pk])
        plan = "\n".join(r[0] for r in cursor.fetchall())
        assert "answer_corrected_at_most_once" in plan, plan
        cursor.execute("SELECT pg_relation_size('answer_corrected_at_most_once') / current_setting('block_size')::int")
        pages = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM annotation_answer WHERE corrects_id IS NOT NULL")
        assert cursor.fetchone()[0] == 1 and pages <= 2  # a metapage and one leaf: no NULL entries


def test_the_migration_goes_back_and_forth(researcher: Any) -> None:
    first, *_ = _answers(researcher, 2)
    answer_correct(answer_id=first.pk, choice="Masculine")
    from django.db.migrations.executor import MigrationExecutor

    with connection.cursor() as cursor:  # the rows' deferred foreign-key checks run now, not at an ALTER
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(connection)
    before = executor.loader.project_state(("annotation", "0013_hot_rows_fewer_indexes")).apps
    with connection.schema_editor() as editor:
        migration.backward(before, editor)
    assert any("annotation_answer_corrects_id_key" in d for d in _unique_indexes_on_corrects())
    with connection.schema_editor() as editor:
        migration.forward(before, editor)
    assert not any("annotation_answer_corrects_id_key" in d for d in _unique_indexes_on_corrects())
    # The data are untouched both ways, and the rule still holds.
    assert Answer.objects.get(corrects=first).choice == "Masculine"
    with pytest.raises(IntegrityError), transaction.atomic():
        Answer.objects.create(campaign_id=first.campaign_id, question_id=first.question_id,
                              annotator_id=first.annotator_id, choice="Feminine", corrects=first)
    assert apps.get_model("annotation", "Answer")._meta.get_field("corrects").many_to_one
