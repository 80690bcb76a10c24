"""Scheduling: the Hybrid-Sorting pause of a server (seed 000) and the index the staleness
choice of the active scan walks (seed 004)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('crawladmin', '0004_scope_and_aliases'),
    ]

    operations = [
        migrations.AddField(
            model_name='server',
            name='paused_until',
            field=models.DateTimeField(blank=True, help_text='Hybrid-Sorting pause (seed 000): its Init URLs wait until this hour', null=True),
        ),
        migrations.AddIndex(
            model_name='url',
            index=models.Index(condition=models.Q(('state', 'visited')), fields=['last_checked_at'], name='url_visited_age_idx'),
        ),
    ]
