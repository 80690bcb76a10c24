# What a link is (anchor text, element, nofollow, #fragments) and what a fragment may name.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("crawladmin", "0009_server_owner"),
    ]

    operations = [
        migrations.AddField(
            model_name="url",
            name="resource",
            field=models.BooleanField(
                db_default=False,
                help_text="An image, stylesheet or script of a page: checked (HEAD, GET when HEAD is refused), "
                "never stored or parsed",
            ),
        ),
        migrations.AddField(
            model_name="link",
            name="anchor_text",
            field=models.CharField(
                blank=True, db_default="", help_text="Whitespace collapsed; alt of an image", max_length=200
            ),
        ),
        migrations.AddField(
            model_name="link",
            name="element",
            field=models.CharField(
                blank=True, db_default="", help_text='"a href", "img src", ...; empty on a redirect', max_length=12
            ),
        ),
        migrations.AddField(
            model_name="link",
            name="fragments",
            field=models.TextField(
                blank=True,
                db_default="",
                help_text="Each #fragment linked to (as written), a tab, its anchor text; one a line",
            ),
        ),
        migrations.AddField(
            model_name="link",
            name="nofollow",
            field=models.BooleanField(db_default=False, help_text="rel=nofollow on the link"),
        ),
        migrations.AddField(
            model_name="page",
            name="anchors",
            field=models.TextField(blank=True, null=True),
        ),
    ]
