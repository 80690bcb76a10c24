"""The monitor's word on a host's health: a confirmed outage holds the server's crawl and a confirmed
recovery releases it (crawlcore.services.health, source MONITOR). Called with the status changes, in the
transaction that writes them, so the crawl never goes on at a server the monitor has just confirmed down.
"""

from __future__ import annotations

from collections.abc import Sequence

from crawlcore.services.health import health_hold, health_release
from crawler.hosthealth import HealthSource
from crawler.status import BAD, GOOD, Status

from ..models import StatusChange


def health_from_changes(changes: Sequence[StatusChange]) -> None:
    """A confirmed outage (disconnect, or error: the server answers, but not as it should) holds the server's
    crawl; a confirmed recovery releases it (crawlcore.services.health), in the transaction of the change."""
    down: dict[int, str] = {}
    up: set[int] = set()
    for change in sorted(changes, key=lambda c: c.at):
        to = Status(change.to_status)
        if to in BAD:
            down[change.server_id] = change.reason
            up.discard(change.server_id)
        elif to in GOOD:
            up.add(change.server_id)
            down.pop(change.server_id, None)
    for server_id, reason in down.items():
        health_hold(server_ids=[server_id], source=HealthSource.MONITOR, reason=reason)
    if up:
        health_release(server_ids=sorted(up), source=HealthSource.MONITOR)
