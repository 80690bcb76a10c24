"""A round of checks: claim the due servers (check_claim), fetch their health URLs in parallel
(check_fetch), write every check and the confirmed status changes in one transaction per batch
(check_record).

Exactly-once writing: a worker claims a batch with one guarded UPDATE (due -> leased under a token), so a
redelivered or duplicated message claims nothing and writes nothing. Records are never lost once fetched:
rows are written in bulk in the same transaction that moves the confirmation state.

Retries (MONITOR_RETRIES): the checks that answered are written first, so a hanging server's retries hold
up no other server's status.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from django.conf import settings
from django.utils import timezone

from .check_claim import monitors_claim
from .check_fetch import checks_fetch, checks_retry, retry_wanted
from .check_record import checks_record
from .check_targets import Checked, monitors_of, target_of


def monitors_check(*, server_ids: Sequence[int], claim: bool = True) -> list[Checked]:
    """One round of checks of these servers. With claim=False (an operator's "check now") the servers
    are checked whether due or not; their schedule then restarts from this check."""
    now, started = timezone.now(), time.monotonic()
    monitors = monitors_claim(server_ids=server_ids, now=now) if claim else list(monitors_of(server_ids))
    if not monitors:
        return []
    checked = checks_fetch(targets=[target_of(m) for m in monitors], retries=0)
    again = [c for c in checked if retry_wanted(c)] if settings.MONITOR_RETRIES else []
    # The servers that answered are written before the others are tried again: their status does not
    # wait (up to the retries' request deadlines) for a server that hangs.
    done = checks_record(checked=[c for c in checked if not (again and retry_wanted(c))], claimed_at=now)
    if again:
        retried = checks_retry(checked=again, retries=settings.MONITOR_RETRIES, started=started)
        done += checks_record(checked=retried, claimed_at=now)
    return done
