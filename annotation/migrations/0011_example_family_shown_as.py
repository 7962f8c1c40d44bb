"""Blinding for old campaigns (issue 22, defect 13): example images stored under the example family
`person:intervention` (before an intervention image was shown as paired) move to `person:paired`, so
no annotator-facing list names the intervention setting. An example whose image is already a
`person:paired` example of the campaign is dropped (the same image and answer would show twice)."""
from django.db import migrations

OLD, NEW = "person:intervention", "person:paired"


def forward(apps, schema_editor):  # noqa: ARG001 (Django's signature)
    example = apps.get_model("annotation", "ExampleImage")
    for row in example.objects.filter(family=OLD).order_by("campaign_id", "order", "pk"):
        paired = example.objects.filter(campaign_id=row.campaign_id, family=NEW)
        if row.image_id is not None and paired.filter(image_id=row.image_id).exists():
            row.delete()
            continue
        last = paired.order_by("-order").values_list("order", flat=True).first()
        row.family, row.order = NEW, 0 if last is None else last + 1
        row.save(update_fields=["family", "order"])


class Migration(migrations.Migration):

    dependencies = [("annotation", "0010_people_claims_releases")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
