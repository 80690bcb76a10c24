"""Recurring maintenance: writing each schedule's coming windows as monitoring's MaintenanceWindow rows.

Written ahead (MAINTENANCE_HORIZON), so a window exists before the checks it covers are recorded, and
idempotent (a window already written is not written again), so beat and the admin may both run it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from crawlcore.models import Server
from monitoring.models import MaintenanceWindow

from ..models import MaintenanceSchedule
from ..recurrence import ScheduleError, occurrences

MAINTENANCE_HORIZON = timedelta(days=2)
log = logging.getLogger(__name__)


def maintenance_windows_write(*, now: datetime | None = None, horizon: timedelta = MAINTENANCE_HORIZON) -> int:
    """Write the windows every enabled schedule opens from now to now + horizon; returns how many were new."""
    now = now or timezone.now()
    created = 0
    for sched in MaintenanceSchedule.objects.filter(enabled=True):
        duration = timedelta(minutes=sched.duration_minutes)
        try:
            windows = list(occurrences(sched.schedule, duration, now, now + horizon))
        except ScheduleError as exc:  # written past the model's check: this schedule opens nothing, others do
            log.warning("maintenance schedule %s skipped: %s", sched.pk, exc)
            continue
        if not windows:
            continue
        if sched.server_id:
            server_ids = [sched.server_id]
        else:
            server_ids = list(Server.objects.filter(group=sched.group).values_list("id", flat=True))
        reason = (f"scheduled: {sched.reason}" if sched.reason else f"scheduled: {sched.schedule}")[:200]
        with transaction.atomic():
            have = set(
                MaintenanceWindow.objects.filter(
                    server_id__in=server_ids, starts_at__in=[s for s, _ in windows]
                ).values_list("server_id", "starts_at", "ends_at")
            )
            rows = [
                MaintenanceWindow(server_id=sid, starts_at=s, ends_at=e, reason=reason)
                for sid in server_ids
                for s, e in windows
                if (sid, s, e) not in have
            ]
            MaintenanceWindow.objects.bulk_create(rows, batch_size=1000)
        created += len(rows)
    return created
