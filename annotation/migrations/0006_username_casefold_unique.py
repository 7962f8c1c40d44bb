"""One account per username whatever its case (common/accounts.py compares NFKC + casefold; the
index is the database's backstop: LOWER(username) unique on the user table)."""
from django.conf import settings
from django.db import migrations


def _table(apps):
    app_label, model = settings.AUTH_USER_MODEL.split(".")
    return apps.get_model(app_label, model)._meta.db_table


def index_create(apps, schema_editor):
    table = schema_editor.quote_name(_table(apps))
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT LOWER(username) FROM {table} GROUP BY LOWER(username) HAVING COUNT(*) > 1")
        clashes = [row[0] for row in cursor.fetchall()]
    if clashes:
        raise RuntimeError("Usernames that differ only by case must be renamed before this migration: "
                           + ", ".join(clashes[:20]))
    schema_editor.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS user_username_lower_uniq ON {table} (LOWER(username))")


def index_drop(apps, schema_editor):
    schema_editor.execute("DROP INDEX IF EXISTS user_username_lower_uniq")


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0005_annotator_kind"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(index_create, index_drop)]
