"""The pages' full-text vectors built in batches (PostgreSQL): the page's text in index form kept on its row
until a batch builds its vector from it (crawlcore.db.fulltext.index_pending), a partial index on the pages
waiting, and beat's job that runs the batches. SQLite keeps indexing in line: its schema does not change."""

from django.db import migrations

from crawlcore.beat import beat_jobs_migration

FIELDS = ("title", "heads", "anchors", "body")


def _create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in FIELDS:
        schema_editor.execute(f"ALTER TABLE crawladmin_page ADD COLUMN IF NOT EXISTS ix_{name} text")
    schema_editor.execute(
        "CREATE INDEX IF NOT EXISTS page_unindexed_idx ON crawladmin_page (id) WHERE ix_body IS NOT NULL"
    )


def _drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS page_unindexed_idx")
    for name in FIELDS:
        schema_editor.execute(f"ALTER TABLE crawladmin_page DROP COLUMN IF EXISTS ix_{name}")


class Migration(migrations.Migration):
    dependencies = [
        ("crawladmin", "0035_freshness"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.RunPython(_create, _drop, elidable=False),
        beat_jobs_migration("crawladmin: search index"),
    ]
