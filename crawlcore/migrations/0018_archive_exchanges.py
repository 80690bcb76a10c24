"""Exchanges kept for the archive where no Page row holds them, and the beat job that drops their old bodies."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models

from crawlcore.beat import beat_jobs_migration


class Migration(migrations.Migration):

    dependencies = [
        ('crawladmin', '0017_status_check_tries'),
        ('django_celery_beat', '0019_alter_periodictasks_options'),
    ]

    operations = [
        migrations.CreateModel(
            name='Exchange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('requested_url', models.TextField()),
                ('kind', models.CharField(default='page', help_text='page, robots or sitemap', max_length=8)),
                ('method', models.CharField(default='GET', max_length=8)),
                ('fetched_at', models.DateTimeField()),
                ('status', models.PositiveSmallIntegerField()),
                ('request_head', models.TextField(blank=True)),
                ('response_head', models.TextField(blank=True)),
                ('peer_ip', models.GenericIPAddressField(blank=True, null=True)),
                ('body_z', models.BinaryField(blank=True, help_text='zlib-compressed body; empty once dropped by retention')),
                ('size', models.PositiveIntegerField(default=0, help_text='Body bytes before compression')),
                ('checksum', models.CharField(blank=True, help_text="sha1 of the body ('' when empty)", max_length=40)),
                ('truncated', models.CharField(blank=True, max_length=12)),
                ('body_dropped_at', models.DateTimeField(blank=True, help_text='When retention removed the body', null=True)),
                ('server', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='crawladmin.server')),
                ('url', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='exchanges', to='crawladmin.url')),
            ],
            options={
                'indexes': [models.Index(fields=['server', 'fetched_at'], name='exchange_server_time_idx'), models.Index(fields=['fetched_at'], name='exchange_time_idx')],
            },
        ),
        beat_jobs_migration("crawladmin: drop old archived error bodies"),
    ]
