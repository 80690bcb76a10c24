"""The dashboard's groups and alerts: viewers and operators read the notification log on the
server page and in the admin; operators also mute a server's alerts ("mute for ..."). Channels hold
secrets and stay with superusers."""

from __future__ import annotations

from django.db import migrations

VIEW = [("alerts", "view_notification"), ("alerts", "view_event"), ("alerts", "view_mute")]
OPERATOR_EXTRA = [("alerts", "add_mute"), ("alerts", "change_mute"), ("alerts", "delete_mute")]


def grant(apps, schema_editor) -> None:
    from django.contrib.auth.management import create_permissions

    config = apps.get_app_config("alerts")
    config.models_module = True
    create_permissions(config, verbosity=0, apps=apps)  # post_migrate has not made them yet on a fresh database
    config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")

    def perms(pairs):
        return [Permission.objects.get(content_type__app_label=a, codename=c) for a, c in pairs]

    for group in Group.objects.filter(name="viewer"):
        group.permissions.add(*perms(VIEW))
    for group in Group.objects.filter(name="operator"):
        group.permissions.add(*perms(VIEW + OPERATOR_EXTRA))


def revoke(apps, schema_editor) -> None:
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    for group in Group.objects.filter(name__in=["viewer", "operator"]):
        group.permissions.remove(
            *Permission.objects.filter(
                content_type__app_label="alerts", codename__in=[c for _, c in VIEW + OPERATOR_EXTRA]
            )
        )


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0004_crawlsample"),
        ("alerts", "0001_initial"),
    ]
    operations = [migrations.RunPython(grant, revoke)]
