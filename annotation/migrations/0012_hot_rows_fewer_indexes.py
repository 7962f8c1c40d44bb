"""Indexes that another index covers, dropped from the tables a HIT cycle writes (annotation/models.py,
above Question): the foreign keys' own indexes where a composite index starts with the same column,
Question.family's two (always looked up within a campaign) and question_pool_idx (the engine reads
question_pool_open_idx). The database side only drops indexes (Django's AlterField would also drop
and re-add each foreign key, validating it over the whole table)."""

import django.db.models.deletion
from django.db import migrations, models


# (index, how to create it again)
DROPPED = [
    ("annotation_answer_campaign_id_8b096ec2",
     "CREATE INDEX annotation_answer_campaign_id_8b096ec2 ON annotation_answer (campaign_id)"),
    ("annotation_assignment_annotator_id_5d071d66",
     "CREATE INDEX annotation_assignment_annotator_id_5d071d66 ON annotation_assignment (annotator_id)"),
    ("annotation_assignment_campaign_id_88239973",
     "CREATE INDEX annotation_assignment_campaign_id_88239973 ON annotation_assignment (campaign_id)"),
    ("annotation_assignmentitem_question_id_3227e107",
     "CREATE INDEX annotation_assignmentitem_question_id_3227e107 ON annotation_assignmentitem (question_id)"),
    ("annotation_question_campaign_id_e91e3b6d",
     "CREATE INDEX annotation_question_campaign_id_e91e3b6d ON annotation_question (campaign_id)"),
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
        ('annotation', '0011_example_family_shown_as'),
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
                model_name='answer',
                name='campaign',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='answers', to='campaigns.campaign'),
            ),
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
                model_name='assignmentitem',
                name='question',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='items', to='annotation.question'),
            ),
            migrations.AlterField(
                model_name='question',
                name='campaign',
                field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='questions', to='campaigns.campaign'),
            ),
            migrations.AlterField(
                model_name='question',
                name='family',
                field=models.CharField(max_length=220),
            ),
            ],
        ),
    ]
