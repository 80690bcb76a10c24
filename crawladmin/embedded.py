"""The embedded mode's in-process Celery worker: a pool of threads consuming every queue of the
`memory://` broker inside the crawl command's own process.
"""

from __future__ import annotations

import logging
import threading
import time
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
_abandoned: list[threading.Thread] = []  # the last worker's threads still in a task after its shutdown wait


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


def _pool_threads_left(worker: WorkController, deadline: float | None) -> list[threading.Thread]:
    """The worker's pool threads still in a task: the idle ones are told to end (and end at once), the
    busy ones get until `deadline` (or a few seconds) to finish."""
    executor = getattr(worker.pool, "executor", None)
    if executor is None:
        return []
    executor.shutdown(wait=False, cancel_futures=True)
    until = time.monotonic() + 5.0 if deadline is None else max(deadline, time.monotonic() + 1.0)
    threads = list(getattr(executor, "_threads", ()))
    for t in threads:
        t.join(max(0.0, until - time.monotonic()))
    return [t for t in threads if t.is_alive()]


def abandoned_threads() -> list[threading.Thread]:
    """The last embedded worker's threads that were still running a task when its shutdown wait ended (a
    request, a lookup or a parse that no stop signal reaches). They are not daemon threads: left alone, the
    interpreter would wait for them at exit, so the crawl command ends its process itself."""
    return [t for t in _abandoned if t.is_alive()]


@contextmanager
def embedded_worker(
    threads: int | None = None,
    *,
    max_pages: int | None = None,
    shutdown_timeout: float = 120.0,
    deadline: float | None = None,
) -> Iterator[WorkController]:
    """Run a thread-pool worker on every queue for the duration of the block. At its end the worker is
    stopped and waited for, `shutdown_timeout` seconds at most, and not past `deadline` (time.monotonic's
    scale); the threads still busy then are abandoned_threads()."""
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
        wait = shutdown_timeout if deadline is None else max(0.0, min(shutdown_timeout, deadline - time.monotonic()))
        thread.join(wait)
        worker_state.should_terminate = None
        _active = False
        workers.embedded_worker_set(False)
        _abandoned[:] = _pool_threads_left(worker, deadline)
        if thread.is_alive():
            log.warning("embedded worker still busy after %.0fs; leaving it to the process exit", wait)
