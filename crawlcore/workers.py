"""Whether this process has a worker: what the admin's actions tell an operator about when queued work runs.

In the cluster mode workers are other processes, consuming the broker whatever this one does. In the
embedded mode (the `memory://` broker) the only worker is the crawl command's thread pool: a process that
only serves the dashboard (the demo after its crawl, runserver) queues work nobody takes until a crawl
command runs. The embedded worker (crawladmin.embedded, above this layer) writes its state down here.
"""

from __future__ import annotations

import threading

from django.conf import settings

_embedded_running = threading.Event()


def embedded_worker_set(running: bool) -> None:
    (_embedded_running.set if running else _embedded_running.clear)()


def queued_work_waits() -> bool:
    """True when work sent to the broker now would wait: the embedded mode with no worker in this process."""
    return settings.CELERY_EMBEDDED and not _embedded_running.is_set()


NO_WORKER = (
    " Nothing runs it yet: in the embedded mode the worker lives in the crawl command, and none runs in this "
    "process. Run `manage.py crawl` (no URLs needed: it resumes from the database) to do it now."
)
