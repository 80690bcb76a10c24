# Broken links with the time first seen broken, and the digests sent to owners.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('crawladmin', '0010_link_details'),
    ]

    operations = [
        migrations.CreateModel(
            name='Digest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('owner_email', models.CharField(blank=True, max_length=254)),
                ('owner_name', models.CharField(blank=True, max_length=200)),
                ('sites', models.JSONField(default=list, help_text='Origins covered')),
                ('broken', models.PositiveIntegerField(default=0)),
                ('fixed', models.PositiveIntegerField(default=0)),
                ('since', models.DateTimeField(blank=True, help_text='The previous digest to this owner', null=True)),
                ('sent_at', models.DateTimeField()),
                ('channel', models.CharField(help_text='email, or file', max_length=20)),
                ('destination', models.CharField(blank=True, help_text='Address or file path', max_length=500)),
                ('body', models.TextField()),
            ],
            options={
                'indexes': [models.Index(fields=['owner_email', 'sent_at'], name='digest_owner_idx')],
            },
        ),
        migrations.CreateModel(
            name='LinkBreak',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('anchor_text', models.CharField(blank=True, help_text='Copied from the link row', max_length=200)),
                ('element', models.CharField(blank=True, help_text='Copied from the link row', max_length=12)),
                ('status', models.PositiveSmallIntegerField(blank=True, help_text='HTTP status of the URL that failed', null=True)),
                ('failure_kind', models.CharField(blank=True, max_length=40)),
                ('redirect_chain', models.TextField(blank=True)),
                ('first_broken_at', models.DateTimeField()),
                ('last_checked_at', models.DateTimeField(blank=True, help_text="The target's last check", null=True)),
                ('fixed_at', models.DateTimeField(blank=True, null=True)),
                ('from_url', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='crawladmin.url')),
                ('site', models.ForeignKey(db_constraint=False, db_index=False, help_text='The server of the page carrying the link', on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='crawladmin.server')),
                ('to_url', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='crawladmin.url')),
            ],
            options={
                'indexes': [models.Index(condition=models.Q(('fixed_at', None)), fields=['site', 'from_url', 'to_url'], name='linkbreak_open_idx'), models.Index(condition=models.Q(('fixed_at', None), _negated=True), fields=['fixed_at'], name='linkbreak_fixed_idx')],
                'constraints': [models.UniqueConstraint(fields=('from_url', 'to_url'), name='linkbreak_unique')],
            },
        ),
    ]
