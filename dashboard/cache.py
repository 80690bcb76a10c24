"""A tiny in-process cache for figures that are costly to compute and fine to show a little stale.

`cached(key, ttl, compute)` recomputes at most once per `ttl` seconds per process: while one request
recomputes an expired value, the others get the previous value instead of piling onto the database
(twenty dashboards refreshing at once must not run twenty GROUP BYs over a million URLs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_values: dict[str, tuple[float, object]] = {}
_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()


def cached(key: str, ttl: float, compute: Callable[[], T]) -> T:
    now = time.monotonic()
    hit = _values.get(key)
    if hit is not None and now - hit[0] < ttl:
        return hit[1]  # type: ignore[return-value]
    with _guard:
        lock = _locks.setdefault(key, threading.Lock())
    if not lock.acquire(blocking=hit is None):
        return hit[1]  # type: ignore[index,return-value]  # someone is refreshing it: the stale value will do
    try:
        hit = _values.get(key)
        if hit is not None and time.monotonic() - hit[0] < ttl:  # refreshed while we waited for the lock
            return hit[1]  # type: ignore[return-value]
        value = compute()
        _values[key] = (time.monotonic(), value)
        return value
    finally:
        lock.release()


def recent(key: str, ttl: float) -> object | None:
    """What `remember` stored under `key` less than `ttl` seconds ago, else None."""
    hit = _values.get(key)
    return hit[1] if hit is not None and time.monotonic() - hit[0] < ttl else None


def remember(key: str, value: object) -> None:
    _values[key] = (time.monotonic(), value)


def clear() -> None:
    """Forget every value (tests)."""
    _values.clear()
