"""After 0012: the other indexes that another index covers or that nothing reads, dropped from the tables
a HIT cycle writes (annotation/models.py, above Question): Assignment's campaign and annotator
foreign-key indexes (the (campaign, status, expires_at) and (annotator, status) indexes lead with
them; a HIT's submit is a non-HOT update of its assignment), Question.family's two (always looked up
within a campaign) and question_pool_idx (the engine reads question_pool_open_idx). The database side
only drops indexes (Django's AlterField would also drop and re-add each foreign key, validating it
over the whole table). Reversible."""

import django.db.models.deletion
from django.db import migrations, models


# (index, how to create it again)
DROPPED = [
    ("annotation_assignment_annotator_id_5d071d66",
     "CREATE INDEX annotation_assignment_annotator_id_5d071d66 ON annotation_assignment (annotator_id)"),
    ("annotation_assignment_campaign_id_88239973",
     "CREATE INDEX annotation_assignment_campaign_id_88239973 ON annotation_assignment (campaign_id)"),
    ("annotation_question_family_c5fde613",
     "CREATE INDEX annotation_question_family_c5fde613 ON annotation_question (family)"),
    ("annotation_question_family_c5fde613_like",
     "CREATE INDEX annotation_question_family_c5fde613_like ON annotation_question (family varchar_pattern_ops)"),
]


def drop(apps, schema_editor):
    for name, _ in DROPPED:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


def create(apps, schema_editor):
    for name, sql in DROPPED:
        if name.endswith("_like") and schema_editor.connection.vendor != "postgresql":
            continue  # PostgreSQL's LIKE index only
        schema_editor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0012_redundant_fk_indexes'),
        ('campaigns', '0004_data_changes'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='question',
            name='question_pool_idx',
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(drop, create)],
            state_operations=[
            migrations.AlterField(
                model_name='assignment',
                name='annotator',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='annotation.annotator'),
            ),
            migrations.AlterField(
                model_name='assignment',
                name='campaign',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='campaigns.campaign'),
            ),
            migrations.AlterField(
                model_name='question',
                name='family',
                field=models.CharField(max_length=220),
            ),
            ],
        ),
    ]
