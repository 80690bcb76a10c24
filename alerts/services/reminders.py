"""Reminders: while a server stays down, its down event is told again every ALERTS_REMINDER_HOURS (0: never)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from crawlcore.models import Server
from monitoring.models import ServerMonitor

from ..logic import BAD, Kind
from ..models import Event
from .outbox import outbox_write


def reminders_write(*, now: datetime | None = None) -> int:
    """A reminder event (kind down, routed as down) for each server down for longer than the interval and
    not told about it for that long. Returns how many were written."""
    hours = settings.ALERTS_REMINDER_HOURS
    if not hours:
        return 0
    now = now or timezone.now()
    cutoff = now - timedelta(hours=hours)
    down = dict(
        ServerMonitor.objects.filter(enabled=True, status__in=BAD, status_since__lte=cutoff).values_list(
            "server_id", "status"
        )
    )
    if not down:
        return 0
    last = dict(
        Event.objects.filter(server_id__in=down, kind=Kind.DOWN.value)
        .values("server_id")
        .annotate(at=Max("at"))
        .values_list("server_id", "at")
    )
    due = [sid for sid in down if last.get(sid) is None or last[sid] <= cutoff]
    if not due:
        return 0
    servers = {s["id"]: s for s in Server.objects.filter(id__in=due).values("id", "group", "owner_email")}
    with transaction.atomic():
        # Two beats racing could both write one; the reminder would then arrive twice, which is harmless.
        events = Event.objects.bulk_create(
            [
                Event(
                    kind=Kind.DOWN.value, server_id=sid, at=now, from_status=down[sid], to_status=down[sid],
                    reason=f"reminder: still {down[sid]}",
                )
                for sid in due
            ]
        )  # fmt: skip
        outbox_write(events=events, servers=servers)
    return len(events)
