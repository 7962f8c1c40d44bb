"""After 0013: "an answer is corrected at most once" kept by a partial unique index over the corrections
only (`corrects IS NOT NULL`) instead of the one-to-one field's unique constraint over every answer.
NULLs never conflicted, so the rule is the same; but every original answer (all of a HIT's, all of a
bulk import's) no longer adds an entry to an index of NULLs (1M answers: ~1.2 s of one INSERT's ~30 s
in a synthetic test, bench/README.md section 2). Lookups by `corrects` (a correction of this answer?)
read the partial index: an equality on the column implies it is not NULL.

The field becomes a ForeignKey with the same name, column, foreign key and related name
(`corrected_by`: `corrected_by__isnull` filters as before). On PostgreSQL the database side only drops
the old constraint (AlterField would also drop and re-add the foreign key, validating it over the
whole table); other databases take Django's AlterField. Reversible."""

import django.db.models.deletion
from django.db import migrations, models

OLD = models.OneToOneField("annotation.answer", blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                           related_name="corrected_by")
NEW = models.ForeignKey("annotation.answer", blank=True, null=True, db_index=False,
                        on_delete=django.db.models.deletion.PROTECT, related_name="corrected_by")


def _unique_on_corrects(schema_editor) -> list[str]:
    with schema_editor.connection.cursor() as cursor:
        constraints = schema_editor.connection.introspection.get_constraints(cursor, "annotation_answer")
    return [name for name, c in constraints.items()
            if c["unique"] and not c["primary_key"] and c["columns"] == ["corrects_id"]
            and name != "answer_corrected_at_most_once"]


def _swap(apps, schema_editor, old, new):
    model = apps.get_model("annotation", "Answer")
    if schema_editor.connection.vendor == "postgresql" and not new.unique:
        for name in _unique_on_corrects(schema_editor):
            schema_editor.execute(f"ALTER TABLE annotation_answer DROP CONSTRAINT {schema_editor.quote_name(name)}")
        return
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE annotation_answer ADD CONSTRAINT annotation_answer_corrects_id_key "
                              "UNIQUE (corrects_id)")
        return
    old_field, new_field = old.clone(), new.clone()
    for f in (old_field, new_field):
        f.set_attributes_from_name("corrects")
        f.model, f.remote_field.model = model, model
    schema_editor.alter_field(model, old_field, new_field)


def forward(apps, schema_editor):
    _swap(apps, schema_editor, OLD, NEW)


def backward(apps, schema_editor):
    _swap(apps, schema_editor, NEW, OLD)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0013_hot_rows_fewer_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forward, backward)],
            state_operations=[migrations.AlterField(model_name="answer", name="corrects", field=NEW)],
        ),
        migrations.AddConstraint(
            model_name="answer",
            constraint=models.UniqueConstraint(condition=models.Q(("corrects__isnull", False)), fields=("corrects",),
                                               name="answer_corrected_at_most_once"),
        ),
    ]
