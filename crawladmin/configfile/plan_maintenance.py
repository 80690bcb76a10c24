"""Planning the file's recurring maintenance: a schedule (cron or weekly, in UTC) for one server or one
group, found again by its target and its schedule, so a changed schedule is a new object and the old one is
pruned."""

from __future__ import annotations

from alerts.models import MaintenanceSchedule
from crawladmin.configfile.keys import MAINTENANCE_KEYS
from crawladmin.configfile.plan import (
    Plan,
    _cleaned,
    _entries,
    _group_of,
    _plan_item,
    _server_of,
    _start,
    _target,
    _target_name,
    _upsert,
)

MAINTENANCE_FIELDS = ("duration_minutes", "reason", "enabled")


def _plan_maintenance(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    seen: set = set()
    for item, where in _entries(items, lines, plan, "maintenance", MAINTENANCE_KEYS,
                                "must be a mapping with schedule, duration_minutes and server or group"):  # fmt: skip
        if item.get("time_zone", "UTC") != "UTC":
            where.problem("time_zone", "maintenance schedules are read in UTC")
            continue
        target = _target(item, where, servers_in_file, "maintenance schedule")
        if target is None:
            continue
        origin, group = target
        schedule = item.get("schedule")
        if not isinstance(schedule, str):
            where.problem("schedule", "required: a 5-field cron expression (UTC) or a weekly time like 'sun 02:00'")
            continue
        key = (origin, group, schedule)
        if key in seen:
            where.problem("schedule", "named twice for the same server or group")
            continue
        seen.add(key)
        existing = _maintenance_of(origin, group, schedule)
        if not where.allowed("update" if existing else "create", "maintenance", group=_group_of(origin, group,
                             servers_in_file), key="server" if origin else "group"):  # fmt: skip
            continue
        sched = MaintenanceSchedule(group=group, schedule=schedule,
                                    **_start(MaintenanceSchedule, existing, MAINTENANCE_FIELDS, item))  # fmt: skip
        # clean() asks only whether it has a server (the row may be made by this file): a stand-in id.
        sched.server_id = -1 if origin else None
        if not _cleaned(sched, where, exclude=["server"]):
            continue
        given = {k: getattr(sched, k) for k in MAINTENANCE_FIELDS if k in item}
        create = {"group": group, "schedule": schedule, **{k: getattr(sched, k) for k in MAINTENANCE_FIELDS}}

        def write(dry: bool, changes: list[str], origin=origin, given=given, create=create) -> str:
            existing = _maintenance_of(origin, create["group"], create["schedule"])
            create = {**create, "server": _server_of(origin)}
            return _upsert(MaintenanceSchedule, existing, given, create, dry, changes)

        _plan_item(plan, "maintenance", f"{_target_name(origin, group)} {schedule}", write)


def _maintenance_of(origin: tuple | None, group: str, schedule: str) -> MaintenanceSchedule | None:
    if origin is not None:
        server = _server_of(origin)
        if server is None:
            return None
        return MaintenanceSchedule.objects.filter(server=server, schedule=schedule).first()
    return MaintenanceSchedule.objects.filter(server__isnull=True, group=group, schedule=schedule).first()
