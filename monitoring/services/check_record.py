"""Writing a round's checks: every StatusCheck row and the confirmation moves they cause, in one
transaction per batch, so a check and its effect on the status stand or fall together. The same transaction
carries what follows a confirmed change: its evidence, incident, host-health hold, alerts' outbox rows and
the certificates seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from crawlcore.db import bulk
from crawlcore.models import StatusCheck
from crawler.lifecycle import Agent
from crawler.windows import in_dated_windows

from .. import hooks
from ..models import ServerMonitor, StatusChange
from ..selectors import maintenance_windows
from .certificates import certificates_record
from .check_confirm import apply_check
from .check_locations import apply_located, location_states, location_states_save
from .check_targets import BAD_SETTINGS, Checked
from .evidence import evidence_record
from .host_health import health_from_changes
from .incidents import incidents_from_changes


def _check_values(c: Checked) -> dict:
    """The StatusCheck row of one check, field name -> value."""
    r, t = c.result, c.result.timings
    return dict(
        server_id=c.target.server_id,
        requested_url=r.url,
        method=r.method,
        checked_at=c.checked_at,
        status_code=r.status,
        category=c.category,
        failure_kind=BAD_SETTINGS if c.target.problem else (c.failure or (r.failure.value if r.failure else "")),
        detail=(c.detail or r.detail)[:300],
        latency_ms=t.total_ms,
        dns_ms=t.dns_ms,
        connect_ms=t.connect_ms,
        first_byte_ms=t.first_byte_ms,
        body_ms=t.body_ms,
        bytes=r.bytes_received,
        agent=Agent.MONITOR.value,
        crawler_num=settings.CRAWLER_NUM,
        tries=c.tries,
    )


def _checks_insert(checked: Sequence[Checked]) -> None:
    """Insert the checks' StatusCheck rows and set each check_id (plain values, no model instances on
    PostgreSQL: see crawlcore.db.bulk.insert_returning_ids)."""
    ids = bulk.insert_returning_ids(StatusCheck, [_check_values(c) for c in checked])
    for c, pk in zip(checked, ids, strict=True):
        c.check_id = pk


_STATE_FIELDS = [
    "status",
    "status_since",
    "candidate",
    "streak",
    "last_check_at",
    "last_category",
    "next_check_at",
    "claim_token",
]


def checks_record(*, checked: Sequence[Checked], claimed_at: datetime | None = None) -> list[Checked]:
    """Write the checks and apply them to each server's confirmation state, all in one transaction.

    The monitors are locked (SELECT ... FOR UPDATE, in id order so two writers can't deadlock) while
    their state moves: two writers with checks of the same server apply them one after the other,
    and neither overwrites the other's streak. On SQLite the IMMEDIATE transaction does the same.
    """
    if not checked:
        return []
    ids = sorted({c.target.server_id for c in checked})
    with transaction.atomic():
        _checks_insert(checked)
        locked = ServerMonitor.objects.select_for_update().filter(server_id__in=ids).order_by("server_id")
        monitors = {m.server_id: m for m in locked.only("server_id", "locations", "quorum", *_STATE_FIELDS)}
        locations = location_states([m for m in monitors.values() if m.locations])
        windows = maintenance_windows(
            server_ids=ids, start=min(c.checked_at for c in checked), end=max(c.checked_at for c in checked)
        )
        changes = []
        for c in sorted(checked, key=lambda c: c.checked_at):
            m = monitors.get(c.target.server_id)
            if m is None:  # its monitor was deleted meanwhile: the check stays, there is no state to move
                c.status = ""
                continue
            paused = in_dated_windows(windows.get(m.server_id, ()), c.checked_at)
            base = claimed_at or c.checked_at
            if m.locations:
                apply_located(m, c, paused, changes, locations, base)
            else:
                apply_check(m, c, paused, changes)
                m.claim_token = ""
            m.next_check_at = base + timedelta(seconds=c.target.interval_s)
        # One UPDATE ... FROM (VALUES ...) on PostgreSQL: bulk_update cost ~70% of a worker's time.
        bulk.update_rows(list(monitors.values()), _STATE_FIELDS)
        location_states_save(locations)
        StatusChange.objects.bulk_create(changes)
        evidence_record(changes=changes, checked=checked)  # what the server answered, with the change
        incidents_from_changes(changes=changes)  # an outage people can read about, with the change
        health_from_changes(changes)  # the crawl holds a server confirmed down and goes on when it is up
        hooks.status_changes_written(changes)  # alerts' outbox rows, in this same transaction
        certificates_record(checked=[c for c in checked if c.result.certificate is not None])
    return list(checked)
