

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('crawladmin', '0007_write_path'),
    ]

    operations = [
        migrations.AddField(
            model_name='server',
            name='load_profile',
            field=models.JSONField(blank=True, help_text='Mean ms per hour of day 0-23 (None: no data); written hourly by the monitor, read by the schedulers', null=True),
        ),
        migrations.AddField(
            model_name='server',
            name='load_profile_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
