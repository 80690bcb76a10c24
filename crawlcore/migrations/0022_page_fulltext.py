"""The pages' full-text index: on PostgreSQL a tsvector column with a GIN index, on SQLite an FTS5 table
keyed by the page id (crawlcore.db.fulltext writes and reads both); and why a page could not be read."""

from django.db import migrations, models


def _create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE crawladmin_page ADD COLUMN IF NOT EXISTS search_vector tsvector")
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS page_search_idx ON crawladmin_page USING gin (search_vector)"
        )
    else:
        schema_editor.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS crawladmin_page_fts USING fts5("
            "title, heads, anchors, body, tokenize = 'porter unicode61 remove_diacritics 2')"
        )


def _drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS page_search_idx")
        schema_editor.execute("ALTER TABLE crawladmin_page DROP COLUMN IF EXISTS search_vector")
    else:
        schema_editor.execute("DROP TABLE IF EXISTS crawladmin_page_fts")


class Migration(migrations.Migration):

    dependencies = [
        ("crawladmin", "0021_jobs_beat"),
    ]

    operations = [
        migrations.AddField(
            model_name="page",
            name="extract_problem",
            field=models.CharField(blank=True, db_default="", max_length=32),
        ),
        migrations.RunPython(_create, _drop, elidable=False),
    ]
