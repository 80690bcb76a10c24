from django.db import migrations, models


class Migration(migrations.Migration):
    """JobUrl.joined: the URL was due in the crawl for its own sake when the job reached it, so the job's pause
    or removal leaves it as it was."""

    dependencies = [
        ("crawladmin", "0032_merge_page_text"),
    ]

    operations = [
        migrations.AddField(
            model_name="joburl",
            name="joined",
            field=models.BooleanField(db_default=False, default=False),
        ),
    ]
