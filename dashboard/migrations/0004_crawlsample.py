"""CrawlSample: the crawl's URLs by state over time (see dashboard/models.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('dashboard', '0003_periodic_tasks'),
    ]

    operations = [
        migrations.CreateModel(
            name='CrawlSample',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('at', models.DateTimeField(db_index=True, help_text='When the counts were taken')),
                ('states', models.JSONField(help_text='URLs by state, excluded ones apart: {state: URLs}')),
                ('excluded', models.PositiveBigIntegerField(default=0)),
            ],
            options={
                'ordering': ['at'],
            },
        ),
    ]
