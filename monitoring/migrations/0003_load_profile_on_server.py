"""The load profile moves from the monitor's row down to the crawl core's server row: the schedulers (crawl
core) read it there, and monitoring, which builds it, writes it down instead of being read up."""

from django.db import migrations


def copy_profiles(apps, schema_editor):
    Server = apps.get_model("crawladmin", "Server")
    ServerMonitor = apps.get_model("monitoring", "ServerMonitor")
    rows = ServerMonitor.objects.filter(load_profile__isnull=False).values_list(
        "server_id", "load_profile", "load_profile_at"
    )
    for server_id, profile, at in rows.iterator(chunk_size=1000):
        Server.objects.filter(id=server_id).update(load_profile=profile, load_profile_at=at)


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0002_periodic_tasks"),
        ("crawladmin", "0008_server_load_profile"),
    ]

    operations = [
        migrations.RunPython(copy_profiles, migrations.RunPython.noop),
        migrations.RemoveField(model_name="servermonitor", name="load_profile"),
        migrations.RemoveField(model_name="servermonitor", name="load_profile_at"),
    ]
