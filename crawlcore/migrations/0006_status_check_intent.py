"""A status check is written as an intent row (category pending) before its request is sent,
and finished with the outcome; the reconciler finds the ones never finished through a partial index."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('crawladmin', '0005_scheduling'),
    ]

    operations = [
        migrations.AlterField(
            model_name='statuscheck',
            name='category',
            field=models.CharField(choices=[('normal', 'Normal'), ('delay', 'Delay'), ('disconnect', 'Disconnect'), ('error', 'Error'), ('pending', 'Pending'), ('interrupted', 'Interrupted')], max_length=12),
        ),
        migrations.AddIndex(
            model_name='statuscheck',
            index=models.Index(condition=models.Q(('category', 'pending')), fields=['checked_at'], name='check_pending_idx'),
        ),
    ]
