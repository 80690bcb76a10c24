"""The dashboard's two groups. "viewer": reads the dashboard (and, with is_staff, the admin) without
changing anything. "operator": the same, plus the changes the admin's actions make (enable, pin, check,
crawl, revive, re-queue, exclude) and maintenance windows. Staff status is set per user, not here."""

from __future__ import annotations

from django.db import migrations

VIEW_MODELS = {
    "crawladmin": ["server", "url", "page", "link", "statuscheck", "urlevent"],
    "monitoring": ["servermonitor", "statuschange", "hourlyrollup", "maintenancewindow"],
    "ranking": ["pagerank", "rankrun"],
}
OPERATOR_EXTRA = [
    ("crawladmin", "change_server"),
    ("crawladmin", "change_url"),
    ("monitoring", "change_servermonitor"),
    ("monitoring", "add_maintenancewindow"),
    ("monitoring", "change_maintenancewindow"),
    ("monitoring", "delete_maintenancewindow"),
]


def _ensure_permissions(apps) -> None:
    # Permissions are normally created after `migrate` ends (post_migrate); on a fresh database they do
    # not exist yet when this migration runs, so create them now (idempotent).
    from django.contrib.auth.management import create_permissions

    for app_label in VIEW_MODELS:
        config = apps.get_app_config(app_label)
        config.models_module = True
        create_permissions(config, verbosity=0, apps=apps)
        config.models_module = None


def create_groups(apps, schema_editor) -> None:
    _ensure_permissions(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    view = [
        Permission.objects.get(content_type__app_label=app, codename=f"view_{model}")
        for app, models in VIEW_MODELS.items()
        for model in models
    ]
    extra = [Permission.objects.get(content_type__app_label=app, codename=code) for app, code in OPERATOR_EXTRA]
    viewer, _ = Group.objects.get_or_create(name="viewer")
    viewer.permissions.add(*view)
    operator, _ = Group.objects.get_or_create(name="operator")
    operator.permissions.add(*view, *extra)


def drop_groups(apps, schema_editor) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=["viewer", "operator"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("crawladmin", "0005_scheduling"),
        ("monitoring", "0002_periodic_tasks"),
        ("ranking", "0002_periodic_task"),
    ]

    operations = [migrations.RunPython(create_groups, drop_groups)]
