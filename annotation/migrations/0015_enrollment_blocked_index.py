"""After 0014: a partial index of the blocked enrollments, (campaign, annotator) WHERE status = 'blocked'. Every
submit's labels statement (annotation/labels.py) reads the campaign's blocked annotators once and hashes them;
the index keeps that read as small as the list of blocked annotators, whatever the number of enrollments.
Enrollments are written once per annotator and campaign, and blocked rarely: the index costs nothing on the
HIT cycle's writes. Reversible (drops the index)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0014_answer_corrects_partial_unique'),
        ('campaigns', '0004_data_changes'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='enrollment',
            index=models.Index(condition=models.Q(('status', 'blocked')), fields=['campaign', 'annotator'], name='enrollment_blocked_idx'),
        ),
    ]
