"""Status values, in one table: the four HTTP-status categories of seed paper 002, and
the statuses a monitored server can show.

A check's category:

normal     – 2xx/3xx within the delay threshold
delay      – a valid response slower than the threshold
disconnect – no HTTP response at all (refused, DNS failure, timeout, reset)
error      – an HTTP response with a 4xx/5xx status

The strings are stored (checks, monitors, the status timeline, rollup columns) and read by the
dashboard's script and the API's clients: they never change.
"""

from __future__ import annotations

import enum


class Category(enum.StrEnum):
    NORMAL = "normal"
    DELAY = "delay"
    DISCONNECT = "disconnect"
    ERROR = "error"


class Status(enum.StrEnum):
    """What a server's monitoring status reads.

    A *confirmed* status (stored on the monitor and in the status timeline) is one of CONFIRMED: a
    category, or unknown before the first. The others are only shown: maintenance while a maintenance
    window is open (its checks are recorded, never confirmed), unmonitored for a server with no monitor,
    stale when its last check is older than twice its interval (whatever it said then is no longer
    known), unconfirmed while a good server's newest checks failed fewer times than it takes to confirm
    it down.
    """

    UNKNOWN = "unknown"
    NORMAL = Category.NORMAL.value
    DELAY = Category.DELAY.value
    DISCONNECT = Category.DISCONNECT.value
    ERROR = Category.ERROR.value
    MAINTENANCE = "maintenance"
    UNMONITORED = "unmonitored"
    STALE = "stale"
    UNCONFIRMED = "unconfirmed"


STALE_AFTER_INTERVALS = 2  # a monitor whose last check is older than this many intervals is stale


CONFIRMED = (Status.UNKNOWN, Status.NORMAL, Status.DELAY, Status.DISCONNECT, Status.ERROR)
GOOD = frozenset({Status.NORMAL, Status.DELAY})  # the server answered as it should
BAD = frozenset({Status.DISCONNECT, Status.ERROR})


def categorize(status: int | None, latency_s: float, delay_threshold_s: float) -> Category:
    if status is None:
        return Category.DISCONNECT
    if status >= 400 or status < 200:
        return Category.ERROR
    if latency_s > delay_threshold_s:
        return Category.DELAY
    return Category.NORMAL
