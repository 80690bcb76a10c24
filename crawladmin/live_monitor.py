"""The embedded mode's monitor: checks the due servers and keeps their rollups while a command serves.

In the cluster mode beat dispatches due servers to the `monitor` queue and workers check them, and beat's
`alerts: send notifications` job sends the outbox every 10 s. A command that only serves (the demo's
runserver) has neither, so without this the dashboard would show the last checks made before serving as
if they were current, and the notifications those checks wrote would stay pending. This loop plays beat
and worker for the monitor and the alert sender in one thread of the serving process, with the same
services: `monitors_check` claims only the due servers
(one guarded UPDATE), so a second checker, a cluster worker or an operator's "check now", never checks a
server twice in one interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import OperationalError, close_old_connections, connection
from django.utils import timezone

from alerts.services.reminders import reminders_write
from alerts.services.send import notifications_send
from monitoring.selectors import monitors_selected
from monitoring.services.check_claim import monitors_claim
from monitoring.services.check_fetch import checks_fetch
from monitoring.services.check_record import checks_record
from monitoring.services.check_targets import target_of
from monitoring.services.history import load_profiles_build, rollups_build

log = logging.getLogger(__name__)

TICK = 1.0  # seconds between looks for due servers: a check is at most this late
ROLLUP_EVERY = 60.0  # beat's is five minutes; uptime reads the newest checks live anyway
PROFILES_EVERY = 3600.0
SEND_EVERY = 10.0  # as beat's `alerts: send notifications`; the grouping window still holds each row back


class _Loop(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="embedded-monitor", daemon=True)
        self.stopping = threading.Event()

    def run(self) -> None:
        last_rollup = last_profiles = time.monotonic()
        last_send = 0.0
        try:
            while not self.stopping.wait(TICK):
                try:
                    _round()
                    now = time.monotonic()
                    if now - last_send >= SEND_EVERY:
                        # After the round: a change it confirmed is sent in this pass once its window is over.
                        last_send = now
                        _send()
                    if now - last_rollup >= ROLLUP_EVERY:
                        rollups_build()
                        last_rollup = now
                    if now - last_profiles >= PROFILES_EVERY:
                        load_profiles_build()
                        last_profiles = now
                except Exception:
                    # A locked SQLite file or a lost database: the next tick tries again, as beat would.
                    log.exception("embedded monitor: round failed; trying again")
                    close_old_connections()
        finally:
            connection.close()  # this thread's own connection


RECORD_TRIES = 20  # a write that meets a locked SQLite table is tried again for up to ~2 s


def _round() -> None:
    """monitors_check, with the record tried again when SQLite is locked: the servers are claimed (their
    lease pushes the next check minutes out), so a record given up on would leave them stale that long."""
    now = timezone.now()
    monitors = monitors_claim(server_ids=monitors_selected(), now=now)
    if not monitors:
        return
    checked = checks_fetch(targets=[target_of(m) for m in monitors])
    for attempt in range(RECORD_TRIES):
        try:
            checks_record(checked=checked, claimed_at=now)
            return
        except OperationalError as exc:
            if "locked" not in str(exc) or attempt == RECORD_TRIES - 1:
                raise
            time.sleep(0.1)


def _send() -> None:
    """The outbox once, as beat's job does: rows past their grouping window go out (each in its own child,
    bounded by ALERTS_SEND_TIMEOUT), failed ones wait their back-off."""
    reminders_write()
    for sent in notifications_send():
        if not sent.ok:
            state = "failed for good" if sent.final else "failed, will retry"
            log.warning("embedded sender: %s %s: %s", sent.channel, state, sent.error)


@contextmanager
def embedded_monitor() -> Iterator[None]:
    """Check due servers and send the alerts they cause, in a background thread, for the duration of the block."""
    loop = _Loop()
    loop.start()
    try:
        yield
    finally:
        loop.stopping.set()
        loop.join(30)
