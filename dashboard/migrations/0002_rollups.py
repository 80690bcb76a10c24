"""The dashboard's precomputed figures: Snapshot, ServerRollup and BrokenLink (see dashboard/models.py)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('crawladmin', '0005_scheduling'),
        ('dashboard', '0001_groups'),
    ]

    operations = [
        migrations.CreateModel(
            name='ServerRollup',
            fields=[
                ('server', models.OneToOneField(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, primary_key=True, related_name='+', serialize=False, to='crawladmin.server')),
                ('url_states', models.JSONField(default=dict, help_text='URLs by state (excluded ones too)')),
                ('failing_url_kinds', models.JSONField(default=list, help_text='[kind, URLs] of its failing URLs, most first')),
                ('check_failure_kinds', models.JSONField(default=list, help_text='[kind, checks] over check_days, most first')),
                ('check_days', models.PositiveSmallIntegerField(default=7)),
                ('uptime_counts', models.JSONField(default=dict, help_text='Per uptime window: checks by category, from rollups')),
                ('computed_at', models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name='Snapshot',
            fields=[
                ('name', models.CharField(max_length=100, primary_key=True, serialize=False)),
                ('data', models.JSONField()),
                ('computed_at', models.DateTimeField(help_text='When the computation started: the figures are as of then')),
                ('seconds', models.FloatField(default=0.0, help_text='How long computing them took')),
            ],
        ),
        migrations.CreateModel(
            name='BrokenLink',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('to_state', models.CharField(help_text="The target's state at the last refresh", max_length=12)),
                ('from_url', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='crawladmin.url')),
                ('site', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='crawladmin.server')),
                ('to_url', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='crawladmin.url')),
            ],
            options={
                'indexes': [models.Index(fields=['site', 'from_url', 'to_url'], name='brokenlink_site_idx')],
                'constraints': [models.UniqueConstraint(fields=('from_url', 'to_url'), name='brokenlink_unique')],
            },
        ),
    ]
