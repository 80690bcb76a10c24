"""Services a benchmark starts for itself: a private redis-server, our own nginx, and celery workers it
waits for before its clock starts (their start-up is not the benchmark's time)."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

# One implementation each, shared with the integration tests and the test webs.
from testweb.cluster import redis_process, redis_server
from testweb.nginx import find_nginx

__all__ = ["find_nginx", "redis_server", "start_redis", "wait_for_workers"]


def start_redis(stack: ExitStack, workdir: str | Path) -> tuple[str, int]:
    """A private redis-server for the life of `stack`: (its URL, its PID, for CPU accounting)."""
    url, proc = stack.enter_context(redis_process(Path(workdir)))
    return url, proc.pid


def wait_for_workers(broker: str, names: list[str] | tuple[str, ...], timeout: float = 120.0) -> None:
    """Until a worker of each name (the part before '@') answers a ping on `broker`; RuntimeError past
    `timeout`."""
    from celery import Celery

    app = Celery(broker=broker)
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            replies = app.control.ping(timeout=1.0) or []
            seen = {name.split("@")[0] for r in replies for name in r}
            if seen >= {n.split("@")[0] for n in names}:
                return
        raise RuntimeError(f"celery workers {sorted(set(names) - seen)} did not answer within {timeout:g} s")
    finally:
        app.close()
