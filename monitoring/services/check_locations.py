"""Several locations: each crawler number confirms on its own LocationState row; a quorum of the
locations' confirmed statuses (monitoring/quorum.py) moves the server's status. Loaded, moved and saved
inside checks_record's transaction; claiming a location's turn is check_claim's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings

from crawler.status import Status

from ..confirm import Confirmation, confirm
from ..models import LocationState, ServerMonitor, StatusChange
from ..quorum import locations_parse, quorum_decide, quorum_needed
from .check_targets import Checked

_LOCATION_FIELDS = ["status", "candidate", "streak", "last_check_at", "last_category", "next_check_at", "claim_token"]


def location_states(monitors: Sequence[ServerMonitor]) -> dict[tuple[int, int], LocationState]:
    """Every listed location's state of these monitors, made (unsaved) where a location has none yet."""
    if not monitors:
        return {}
    rows = LocationState.objects.filter(server_id__in=[m.server_id for m in monitors])
    states = {(s.server_id, s.crawler_num): s for s in rows}
    for m in monitors:
        for num in locations_parse(m.locations):
            states.setdefault((m.server_id, num), LocationState(server_id=m.server_id, crawler_num=num))
    return states


def location_states_save(states: dict[tuple[int, int], LocationState]) -> None:
    if states:
        LocationState.objects.bulk_create(
            list(states.values()),
            update_conflicts=True,
            unique_fields=["server", "crawler_num"],
            update_fields=_LOCATION_FIELDS,
        )


def apply_located(
    m: ServerMonitor,
    c: Checked,
    paused: bool,
    changes: list[StatusChange],
    states: dict[tuple[int, int], LocationState],
    base: datetime,
) -> None:
    """A check of a multi-location monitor moves the state of the location that made it (this worker's
    CRAWLER_NUM); the server's status then follows a quorum of the locations' confirmed statuses."""
    m.last_check_at, m.last_category = c.checked_at, c.category
    here = states.get((m.server_id, settings.CRAWLER_NUM)) if settings.CRAWLER_NUM is not None else None
    if here is None:  # checked from a crawler number not listed: recorded, counts for no location
        c.status = m.status
        return
    here.last_check_at, here.last_category, here.claim_token = c.checked_at, c.category, ""
    here.next_check_at = base + timedelta(seconds=c.target.interval_s)
    if paused:
        c.status = Status.MAINTENANCE.value
        return
    state = Confirmation(Status(here.status), Status(here.candidate) if here.candidate else None, here.streak)
    new, _ = confirm(state, c.category, fail_after=c.target.fail_after, recover_after=c.target.recover_after)
    here.status, here.candidate, here.streak = (
        new.status.value,
        new.candidate.value if new.candidate else "",
        new.streak,
    )
    nums = locations_parse(m.locations)
    seen = {n: Status(states[(m.server_id, n)].status) for n in nums}
    decided = quorum_decide(Status(m.status), seen, quorum_needed(len(nums), m.quorum))
    if decided is not None:
        change = StatusChange(
            server_id=m.server_id,
            from_status=m.status,
            to_status=decided.to_status.value,
            at=c.checked_at,
            reason=decided.reason[:200],
            status_check_id=c.check_id,
        )
        change.locations = decided.seen  # not a column: alerts' hook puts it in the message
        changes.append(change)
        m.status, m.status_since, c.changed_from = decided.to_status.value, c.checked_at, change.from_status
    c.status = m.status
