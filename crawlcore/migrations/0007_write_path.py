"""The crawl's write path. A claim of 1,000 URLs in a 1,000,000-URL frontier under 50 ms: the lease
columns lose their index and the URL table keeps 10 % of each page free, so a claim updates its rows in
place (HOT) instead of adding an entry to every index per row. Indexes another index already covers, and
PostgreSQL's extra LIKE indexes on hashes, are dropped; links (~30 a page) have no database-level foreign
keys (deletes cascade through the ORM)."""

import django.db.models.deletion
from django.db import migrations, models


def _fillfactor(value):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE crawladmin_url SET (fillfactor = {value})")

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("crawladmin", "0006_status_check_intent"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="url",
            name="url_lease_idx",
        ),
        migrations.AlterField(
            model_name="link",
            name="from_url",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="links_out",
                to="crawladmin.url",
            ),
        ),
        migrations.AlterField(
            model_name="link",
            name="to_url",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="links_in",
                to="crawladmin.url",
            ),
        ),
        migrations.AlterField(
            model_name="page",
            name="checksum",
            field=models.CharField(max_length=40),
        ),
        migrations.AlterField(
            model_name="url",
            name="server",
            field=models.ForeignKey(
                db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="urls", to="crawladmin.server"
            ),
        ),
        migrations.AlterField(
            model_name="url",
            name="url_hash",
            field=models.CharField(help_text="sha1 of the canonical URL", max_length=40),
        ),
        migrations.AlterField(
            model_name="urlevent",
            name="url",
            field=models.ForeignKey(
                db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="events", to="crawladmin.url"
            ),
        ),
        migrations.AddIndex(
            model_name="page",
            index=models.Index(fields=["checksum"], name="page_checksum_idx"),
        ),
        migrations.AddConstraint(
            model_name="url",
            constraint=models.UniqueConstraint(fields=("url_hash",), name="url_hash_unique"),
        ),
        migrations.RunPython(_fillfactor(90), _fillfactor(100)),
    ]
