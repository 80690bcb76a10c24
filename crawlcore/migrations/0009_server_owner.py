from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("crawladmin", "0008_server_load_profile"),
    ]

    operations = [
        migrations.AddField(
            model_name="server",
            name="owner_name",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="server",
            name="owner_email",
            field=models.EmailField(blank=True, help_text="Gets this server's alerts", max_length=254),
        ),
    ]
