"""Planning the file's mutes: alerts of one server or one group held until a time. Only a running mute is
found again (the latest of its target); one that has run out is history, and the file's entry makes a new
one."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from alerts.models import Mute
from crawladmin.configfile.keys import MUTE_KEYS
from crawladmin.configfile.plan import (
    Plan,
    _entries,
    _group_of,
    _plan_item,
    _server_of,
    _target,
    _target_name,
    _upsert,
)


def _when(value: object) -> datetime | None:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value
    return None


def _mute_of(origin: tuple | None, group: str, now: datetime) -> Mute | None:
    running = Mute.objects.filter(until__gt=now).order_by("-until")
    if origin is not None:
        server = _server_of(origin)
        return running.filter(server=server).first() if server is not None else None
    return running.filter(server__isnull=True, group=group).first()


def _plan_mutes(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    seen: set = set()
    now = timezone.now()
    for item, where in _entries(items, lines, plan, "mutes", MUTE_KEYS,
                                "must be a mapping with until and server or group"):  # fmt: skip
        target = _target(item, where, servers_in_file, "mute")
        if target is None:
            continue
        origin, group = target
        until = _when(item.get("until"))
        if until is None:
            where.problem("until", "required: a time with its zone, e.g. 2030-01-01T00:00:00+00:00")
            continue
        reason = item.get("reason", "")
        if not isinstance(reason, str) or len(reason) > 200:
            where.problem("reason", "text of at most 200 characters")
            continue
        if (origin, group) in seen:
            where.problem("server" if origin else "group", "muted twice")
            continue
        if not where.allowed("create", "mute", group=_group_of(origin, group, servers_in_file),
                             key="server" if origin else "group"):  # fmt: skip
            continue
        seen.add((origin, group))

        def write(dry: bool, changes: list[str], origin=origin, group=group, until=until, reason=reason) -> str:
            existing = _mute_of(origin, group, now)
            given = {"until": until, "reason": reason}
            return _upsert(Mute, existing, given, {**given, "group": group, "server": _server_of(origin)}, dry, changes)

        _plan_item(plan, "mute", _target_name(origin, group), write)
