"""The embedded mode's in-process Celery worker: a pool of threads consuming every queue of the
`memory://` broker inside the crawl command's own process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from celery.worker import WorkController
from celery.worker import state as worker_state
from django.conf import settings

from crawladmin.celery import app
from crawlcore import workers
from crawlcore.queues import SERVER_QUEUES, Queue, pinned_queue

log = logging.getLogger(__name__)


class Gate:
    """What the embedded crawl command tells its load agents: stop now, or only N more pages.

    A cluster worker has no gate: Celery's warm shutdown stops it, and --max-pages there is approximate.
    """

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self._left: int | None = None
        self._lock = threading.Lock()

    def reset(self, budget: int | None = None) -> None:
        with self._lock:
            self.stopped.clear()
            self._left = budget

    def take(self) -> bool:
        """Permission for one more page; False once stopped or the budget is spent."""
        with self._lock:
            if self.stopped.is_set():
                return False
            if self._left is None:
                return True
            if self._left <= 0:
                self.stopped.set()
                return False
            self._left -= 1
            return True

    def wait(self, seconds: float) -> bool:
        """Sleep, waking early on stop; True when stopped."""
        return self.stopped.wait(seconds)


_gate = Gate()
_active = False


def gate() -> Gate | None:
    return _gate if _active else None


def queues() -> list[str]:
    """Every queue, and the crawl agents' pinned queues of this CRAWLER_NUM. Not the monitor's: in the
    embedded mode monitoring sends pinned servers' checks to the plain queue (monitor_queue says why)."""
    names = [q.value for q in Queue]
    if settings.CRAWLER_NUM is not None:
        names += [pinned_queue(name, settings.CRAWLER_NUM) for name in SERVER_QUEUES]
    return names


class _Controller(WorkController):
    def __init__(self, *args, **kwargs):
        self.ready = threading.Event()
        super().__init__(*args, **kwargs)

    def on_consumer_ready(self, consumer) -> None:
        self.ready.set()


@contextmanager
def embedded_worker(
    threads: int | None = None, *, max_pages: int | None = None, shutdown_timeout: float = 120.0
) -> Iterator[WorkController]:
    """Run a thread-pool worker on every queue for the duration of the block."""
    global _active
    if not settings.CELERY_EMBEDDED:
        raise RuntimeError("the embedded worker runs only with the in-process memory:// broker")
    app.finalize()
    app.set_current()
    app.set_default()
    worker = _Controller(
        app=app,
        concurrency=threads or settings.CRAWL_EMBEDDED_THREADS,
        pool="threads",
        queues=queues(),
        hostname=f"embedded@{threading.get_native_id()}",
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        loglevel="WARNING",
        ready_callback=None,
    )
    _gate.reset(max_pages)
    _active = True
    workers.embedded_worker_set(True)
    thread = threading.Thread(target=worker.start, name="embedded-worker", daemon=True)
    thread.start()
    if not worker.ready.wait(30):
        raise RuntimeError("the embedded worker did not start within 30 s")
    try:
        yield worker
    finally:
        _gate.stopped.set()  # load batches end after their current request
        worker_state.should_terminate = 0
        thread.join(shutdown_timeout)
        worker_state.should_terminate = None
        _active = False
        workers.embedded_worker_set(False)
        if thread.is_alive():
            log.warning("embedded worker still busy after %.0fs; leaving it to the process exit", shutdown_timeout)
