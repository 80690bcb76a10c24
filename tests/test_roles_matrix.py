"""The role rules (crawlcore.roles) through every door: for each role × object × action × server group, the
admin, the REST API and `manage.py apply` (crawladmin.configfile, with the user as actor) allow exactly what the
table allows. A difference between any door and the table, or between two doors, fails here."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.test import Client, RequestFactory

from alerts.models import Channel, MaintenanceSchedule, Mute
from crawladmin.configfile.apply import config_apply
from crawladmin.configfile.read import ConfigError
from crawlcore import roles
from crawlcore.models import Job, Server
from dashboard.models import ApiToken, StatusPage
from dashboard.tokens import api_token_create
from monitoring.models import Incident, MaintenanceWindow, ServerMonitor

pytestmark = pytest.mark.django_db

ROLES = {
    "viewer": ("viewer",),
    "viewer of physics": ("viewer", "servers:physics"),
    "operator of physics": ("operator", "servers:physics"),
    "operator": ("operator",),
    "superuser": (),
}
GROUPS = ("physics", "chemistry")


def _user(role: str) -> tuple[User, str]:
    user = User.objects.create_user(role.replace(" ", "_"), is_staff=True, is_superuser=role == "superuser")
    for g in ROLES[role]:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return user, api_token_create(user=user)[1]


class World:
    """Per group: a server with a monitor, a server without, a job on it; one channel for all."""

    def __init__(self):
        self.server, self.bare = {}, {}
        for i, g in enumerate(GROUPS):
            s = Server.objects.create(scheme="http", host=f"{g}.example", port=80, group=g)
            ServerMonitor.objects.create(server=s, interval_s=60)
            self.server[g] = s
            self.bare[g] = Server.objects.create(scheme="http", host=f"bare-{g}.example", port=80, group=g)
            Job.objects.create(name=f"job-{g}", group=g, seeds=[f"http://{g}.example/"])
            assert i in (0, 1)
        Channel.objects.create(name="ops", url="json://127.0.0.1:9/hook")


def _call(method: str, path: str, token: str, body: dict | None = None) -> int:
    data = json.dumps(body) if body is not None else None
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    response = getattr(Client(), method)(path, data=data, content_type="application/json", **auth)
    return response.status_code


def _api(world: World, token: str, obj: str, action: str, group: str) -> bool:
    s, bare = world.server[group], world.bare[group]
    calls = {
        ("server", "read"): ("get", f"/api/v1/servers/{s.id}/", None),
        ("server", "create"): ("post", "/api/v1/servers/", {"url": f"http://new-{group}.example", "group": group}),
        ("server", "update"): ("patch", f"/api/v1/servers/{s.id}/", {"enabled": False}),
        ("server", "delete"): ("delete", f"/api/v1/servers/{s.id}/", None),
        ("monitor", "read"): ("get", f"/api/v1/monitors/{s.id}/", None),
        ("monitor", "create"): ("post", "/api/v1/monitors/", {"server": bare.origin, "interval_s": 90}),
        ("monitor", "update"): ("patch", f"/api/v1/monitors/{s.id}/", {"interval_s": 120}),
        ("monitor", "delete"): ("delete", f"/api/v1/monitors/{s.id}/", None),
        ("channel", "read"): ("get", "/api/v1/channels/ops/", None),
        ("channel", "create"): ("post", "/api/v1/channels/", {"name": "mine", "url": "json://127.0.0.1:9/x"}),
        ("channel", "update"): ("patch", "/api/v1/channels/ops/", {"url": "json://127.0.0.1:9/mine"}),
        ("channel", "delete"): ("delete", "/api/v1/channels/ops/", None),
        ("job", "read"): ("get", f"/api/v1/jobs/job-{group}/", None),
        ("job", "create"): ("post", "/api/v1/jobs/", {"name": f"new-{group}", "group": group,
                                                      "seeds": [f"http://{group}.example/"]}),
        ("job", "update"): ("patch", f"/api/v1/jobs/job-{group}/", {"max_pages": 5}),
        ("job", "delete"): ("delete", f"/api/v1/jobs/job-{group}/", None),
        ("job", "run"): ("post", f"/api/v1/jobs/job-{group}/start/", None),
    }  # fmt: skip
    method, path, body = calls[(obj, action)]
    code = _call(method, path, token, body)
    assert code in (200, 201, 204, 403, 404), (obj, action, code)
    return code < 300


def _apply(world: World, user: User, obj: str, action: str, group: str) -> bool | None:
    """Apply can create and update (its removals are --prune's); None where it has nothing to say."""
    s, bare = world.server[group], world.bare[group]
    docs = {
        ("server", "create"): {"servers": [{"url": f"http://new-{group}.example", "group": group}]},
        ("server", "update"): {"servers": [{"url": s.origin, "group": group, "enabled": False}]},
        ("monitor", "create"): {"monitors": [{"server": bare.origin, "interval_s": 90}]},
        ("monitor", "update"): {"monitors": [{"server": s.origin, "interval_s": 120}]},
        ("channel", "create"): {"channels": [{"name": "mine", "url": "json://127.0.0.1:9/x"}]},
        ("channel", "update"): {"channels": [{"name": "ops", "url": "json://127.0.0.1:9/mine"}]},
        ("job", "create"): {"jobs": [{"name": f"new-{group}", "group": group, "seeds": [f"http://{group}.example/"]}]},
        ("job", "update"): {"jobs": [{"name": f"job-{group}", "group": group, "seeds": [f"http://{group}.example/"],
                                      "max_pages": 5}]},
    }  # fmt: skip
    doc = docs.get((obj, action))
    if doc is None:
        return None
    try:
        with transaction.atomic():
            config_apply(json.dumps(doc), actor=user)
            transaction.set_rollback(True)
    except ConfigError as exc:
        assert all("not allowed" in p for p in exc.problems), exc.problems
        return False
    return True


MODELS = {"server": Server, "monitor": ServerMonitor, "channel": Channel, "job": Job, "mute": Mute,
          "maintenance": MaintenanceWindow, "status_page": StatusPage, "incident": Incident,
          "token": ApiToken}  # fmt: skip


def _row(world: World, obj: str, group: str, user: User):
    s = world.server[group]
    if obj == "server":
        return s
    if obj == "monitor":
        return s.monitor
    if obj == "channel":
        return Channel.objects.get(name="ops")
    if obj == "job":
        return Job.objects.get(name=f"job-{group}")
    if obj == "mute":
        return Mute.objects.create(server=s, reason="x", until=_now())
    if obj == "maintenance":
        start = _now()
        return MaintenanceWindow.objects.create(server=s, starts_at=start, ends_at=start + timedelta(hours=1))
    if obj == "status_page":
        return StatusPage.objects.create(slug=f"p-{group}", group=group)
    if obj == "incident":
        from django.utils import timezone

        return Incident.objects.create(server=s, title="down", opened_at=timezone.now())
    if obj == "token":
        return ApiToken.objects.filter(user=user).first()
    raise AssertionError(obj)


def _admin(world: World, user: User, obj: str, action: str, group: str) -> bool:
    request = RequestFactory().get("/admin/")
    request.user = user
    model = MODELS[obj]
    model_admin = admin.site._registry[model]
    row = _row(world, obj, group, user)
    visible = model_admin.get_queryset(request).filter(pk=row.pk).exists()
    if action == "read":
        return visible and model_admin.has_view_permission(request, row)
    if action == "update":
        return visible and model_admin.has_change_permission(request, row)
    if action == "delete":
        return visible and model_admin.has_delete_permission(request, row)
    if action == "run":
        return visible and model_admin.has_run_permission(request)
    # create: the add permission, then the save within the saver's groups (ReaderScopedAdmin.save_model)
    if not model_admin.has_add_permission(request):
        return False
    return _admin_saves(model_admin, request, obj, group, world)


def _admin_saves(model_admin, request, obj: str, group: str, world: World) -> bool:
    new = {
        "server": lambda: Server(scheme="http", host=f"new-{group}.example", port=80, group=group),
        "monitor": lambda: ServerMonitor(server=world.bare[group], interval_s=90),
        "channel": lambda: Channel(name="mine", url="json://127.0.0.1:9/x"),
        "job": lambda: Job(name=f"new-{group}", group=group, seeds=[f"http://{group}.example/"]),
        "mute": lambda: Mute(server=world.server[group], reason="y", until=_now()),
        "maintenance": lambda: MaintenanceWindow(
            server=world.server[group], starts_at=_now(), ends_at=_now() + timedelta(hours=1)
        ),
        "status_page": lambda: StatusPage(slug=f"n-{group}", group=group),
        "incident": lambda: Incident(server=world.bare[group], title="t", opened_at=_now()),
    }
    if obj == "token":
        return True  # one's own token: the form offers the user alone (dashboard.admin)
    try:
        with transaction.atomic():
            model_admin.save_model(request, new[obj](), None, False)
            transaction.set_rollback(True)
    except PermissionDenied:
        return False
    return True


def _now():
    from django.utils import timezone

    return timezone.now()


CELLS = [(role, obj, action, group) for role in ROLES for obj in MODELS for action in roles.ACTIONS
         for group in GROUPS if not (action == "run" and obj not in ("server", "monitor", "job"))]  # fmt: skip


@pytest.mark.parametrize(("role", "obj", "action", "group"), CELLS)
def test_every_door_allows_what_the_role_rules_allow(role, obj, action, group):
    world = World()
    user, token = _user(role)
    grouped = obj not in ("channel", "token")
    expected = roles.may(user, action, obj, group=group if grouped else None)
    seen = {"admin": _admin(world, user, obj, action, group)}
    api_says = None
    if obj in ("server", "monitor", "channel", "job") and not (action == "run" and obj != "job"):
        api_says = _api(world, token, obj, action, group)
        seen["api"] = api_says
    apply_says = _apply(world, user, obj, action, group)
    if apply_says is not None:
        seen["apply"] = apply_says
    assert seen == dict.fromkeys(seen, expected), (role, obj, action, group)


def test_the_table_matches_what_the_admin_enforced_before_it():
    """Channels and status pages were the superuser's, mutes and maintenance the operator's: kept."""
    table = roles.RULES
    assert all(rule.role == roles.SUPERUSER for rule in table["channel"].values())
    assert all(rule.role == roles.SUPERUSER for rule in table["rule"].values())
    assert table["mute"]["create"].role == table["maintenance"]["delete"].role == roles.OPERATOR
    assert table["server"]["create"].role == table["server"]["delete"].role == roles.SUPERUSER
    assert table["server"]["update"].role == roles.OPERATOR
    assert {a: r.role for a, r in table["job"].items()} == dict.fromkeys(roles.ACTIONS, roles.OPERATOR) | {
        "read": roles.VIEWER
    }
    assert MaintenanceSchedule in admin.site._registry
