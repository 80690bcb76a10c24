"""How one check moves a single-location server's confirmation state (monitoring/confirm.py's rule on the
stored status, candidate and streak), and the StatusChange it confirms. Runs inside checks_record's
transaction on the locked monitor; a monitor with several locations goes through check_locations instead.
"""

from __future__ import annotations

import logging

from crawler.status import CONFIRMED, Status

from ..confirm import Confirmation, confirm
from ..models import ServerMonitor, StatusChange
from .check_targets import Checked

log = logging.getLogger(__name__)


def _state_of(m: ServerMonitor) -> Confirmation:
    """The stored confirmation state; a value no version of this code writes starts over from unknown
    rather than failing the whole batch's transaction."""
    try:
        status, candidate = Status(m.status), Status(m.candidate) if m.candidate else None
        if status not in CONFIRMED or (candidate is not None and candidate not in CONFIRMED):
            raise ValueError(status)
        return Confirmation(status, candidate, max(m.streak, 0))
    except ValueError:
        log.warning("server %s: unknown stored status %r / %r, starting over", m.server_id, m.status, m.candidate)
        return Confirmation()


def apply_check(m: ServerMonitor, c: Checked, paused: bool, changes: list[StatusChange]) -> None:
    m.last_check_at = c.checked_at
    m.last_category = c.category
    if paused:
        # Inside a maintenance window a check is recorded but moves no status: a planned outage must
        # neither page anyone nor count as a confirmed failure once the window ends.
        c.status = Status.MAINTENANCE.value
        return
    state = _state_of(m)
    new, change = confirm(state, c.category, fail_after=c.target.fail_after, recover_after=c.target.recover_after)
    m.status, m.candidate, m.streak = new.status.value, new.candidate.value if new.candidate else "", new.streak
    c.status = m.status
    if change is not None:
        m.status_since = c.checked_at
        c.changed_from = change.from_status.value
        changes.append(
            StatusChange(
                server_id=m.server_id,
                from_status=change.from_status.value,
                to_status=change.to_status.value,
                at=c.checked_at,
                reason=change.reason[:200],
                status_check_id=c.check_id,
            )
        )
