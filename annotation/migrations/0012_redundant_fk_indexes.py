"""Issue 23 (imports): drop four single-column foreign-key indexes that a composite index already serves,
so each answer and lease row written and each question counter update maintains fewer indexes (a
bulk import writes a million answers and leases and updates 336,000 questions).

- `annotation_answer (campaign_id)`: the `(campaign_id, question_id)` index leads with campaign_id; every
  query by campaign (reports, counts, the data revision's count and max id, Django's cascade delete)
  reads it instead.
- `annotation_question (campaign_id)` and `(image_id)`: the `(campaign_id, setting)` and pool indexes lead
  with campaign_id, the unique `(image_id, slot)` with image_id. A question's counters are updated on every
  submit and import and `assigned` is in the pool indexes (no HOT update), so each index is rewritten.
- `annotation_assignmentitem (question_id)`: the unique `(question_id, annotator_id)` index leads with
  question_id; the HIT engines' "never the same question twice" probe (question and annotator) already
  used it, Django's cascade delete by question reads it too.

Reversible: backwards re-creates the four indexes (Django's names); no data changes. Dropping an index
takes a short ACCESS EXCLUSIVE lock on the table; re-creating one blocks writes while it builds.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0011_example_family_shown_as'),
        ('campaigns', '0004_data_changes'),
        ('generation', '0003_image_queued_at'),
    ]

    operations = [
        migrations.AlterField(
            model_name='answer',
            name='campaign',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='answers', to='campaigns.campaign'),
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
            name='image',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='questions', to='generation.image'),
        ),
    ]
