"""The Celery app. Workers: `celery -A crawladmin worker -Q load` (or extract, housekeeping)."""

from __future__ import annotations

import logging
import os
import threading
import time

from celery import Celery, Task
from celery.signals import celeryd_after_setup, task_postrun, task_prerun
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

from crawlcore.beat import beat_job_of_task

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")
# A worker does not run Django's system checks when it loads its tasks (Celery's Django fix-up runs them
# unless this is set): they import the URLconf, every view, the admin and every template tag library, ~10 MB
# of a worker at its start that no task needs. `manage.py migrate`, `check` and the web app still run them.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

log = logging.getLogger("crawladmin.celery")

# Deliveries of one message (one attempt of a task) before it is dropped. Late acks redeliver the task of
# a worker that died (reject on worker lost: at once; a whole worker: after the visibility timeout), so a
# message that kills its worker every time would otherwise come back forever. Dropping it loses nothing:
# its work is rows in the database, which the dispatcher, the reconciler and the sweeps offer again.
MAX_DELIVERIES = 5
_DELIVERY_TTL = 86400  # seconds a delivery count is kept in Redis


class _Deliveries:
    """Counts each start of a task message in the broker's Redis (INCR), shared by every worker."""

    def __init__(self) -> None:
        self._client = None
        self._lock = threading.Lock()

    def count(self, app: Celery, key: str) -> int | None:
        """This delivery's number, or None when unknown (not Redis, or Redis unreachable: run anyway)."""
        url = app.conf.broker_url or ""
        if not url.startswith(("redis://", "rediss://")):
            return None
        try:
            with self._lock:
                if self._client is None:
                    import redis

                    self._client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
            pipe = self._client.pipeline()
            pipe.incr(key).expire(key, _DELIVERY_TTL)
            return int(pipe.execute()[0])
        except Exception as exc:  # the count is a guard, never a reason not to work
            log.warning("delivery count unavailable (%s): running the task", exc)
            return None


_deliveries = _Deliveries()


class CrawlTask(Task):
    """Every task of the project: a message delivered more than MAX_DELIVERIES times is dropped."""

    def __call__(self, *args, **kwargs):
        request = self.request
        if not request.called_directly and not request.is_eager and request.id:
            key = f"crawladmin:deliveries:{request.id}:{request.retries or 0}"
            n = _deliveries.count(self.app, key)
            if n is not None and n > MAX_DELIVERIES:
                log.error(
                    "task %s[%s] dropped: delivered %d times (its worker died each time); "
                    "its work stays in the database and is offered again with a new message",
                    self.name,
                    request.id,
                    n,
                )
                return None
        if request.called_directly or beat_job_of_task(self.name) is None:
            return super().__call__(*args, **kwargs)
        return self._timed(args, kwargs)

    def _timed(self, args, kwargs):
        """A beat job's run, timed and recorded (crawlcore.services.beat_runs), raised or not."""
        from django.utils import timezone

        from crawlcore.services.beat_runs import beat_run_record

        started_at, t0, ok = timezone.now(), time.monotonic(), False
        try:
            result = super().__call__(*args, **kwargs)
            ok = True
            return result
        finally:
            beat_run_record(task=self.name, started_at=started_at, seconds=time.monotonic() - t0, ok=ok)


class _RedisQoS(kombu_redis.QoS):
    """kombu's Redis acknowledgements, made to survive a broker restart.

    When the connection to Redis breaks while tasks run (late acks: their messages are unacknowledged),
    kombu closes the channel twice; the second time it tries to hand the messages back through a
    transport already torn down and raises AttributeError, which Celery treats as unrecoverable: the
    worker exits (kombu 5.7). Later, the tasks that were running ack through that dead channel and fail
    the same way. Here both only log: a message neither handed back nor acknowledged stays in Redis'
    unacked set, and Redis gives it to a worker again after the visibility timeout, where it finds its
    work done or claimed, as any redelivered message does."""

    def restore_unacked(self, client=None):
        try:
            return super().restore_unacked(client)
        except Exception as exc:
            log.warning(
                "broker connection lost: %d running task messages stay unacknowledged and come back after the "
                "visibility timeout (%r)",
                len(self._delivered),
                exc,
            )
            return None

    def ack(self, delivery_tag):
        try:
            self._remove_from_indices(delivery_tag).execute()
        except Exception as exc:
            log.warning(
                "ack of message %s lost with the broker connection; it will be redelivered (%r)", delivery_tag, exc
            )
        virtual.QoS.ack(self, delivery_tag)

    def reject(self, delivery_tag, requeue=False):
        try:
            super().reject(delivery_tag, requeue=requeue)
        except Exception as exc:
            log.warning(
                "reject of message %s lost with the broker connection; it will be redelivered (%r)", delivery_tag, exc
            )
            virtual.QoS.ack(self, delivery_tag)


class _RedisChannel(kombu_redis.Channel):
    QoS = _RedisQoS


class RedisTransport(kombu_redis.Transport):
    """The Redis transport with _RedisQoS (settings: CELERY_BROKER_TRANSPORT for redis:// brokers)."""

    Channel = _RedisChannel


app = Celery("crawladmin", task_cls=CrawlTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.imports = (
    *("tasks.load", "tasks.extract", "tasks.housekeeping", "tasks.monitor", "tasks.scan", "tasks.rank"),
    "tasks.render",
    "tasks.alerts",
    "tasks.reports",
    "tasks.dashboard",
)


@task_prerun.connect
@task_postrun.connect
def _recycle_database(sender=None, **kwargs) -> None:
    """Around each task, what Django does around each web request: close this thread's connection only
    when it is broken or older than CONN_MAX_AGE (settings.CELERY_DB_REUSE_MAX explains why). Not for
    eager tasks, which run inside their caller's transaction."""
    request = getattr(sender, "request", None)
    if getattr(request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


@celeryd_after_setup.connect
def _consume_pinned_queues(sender, instance, **kwargs) -> None:
    """A worker started with CRAWLER_NUM=n on a pinnable queue (load, a scan, monitor) also takes the servers
    pinned to n, from that queue's pinned variant."""
    from django.conf import settings

    from crawlcore.queues import PINNABLE, pinned_queue

    queues = instance.app.amqp.queues
    for name in PINNABLE:
        if settings.CRAWLER_NUM is not None and name in (queues.consume_from or {}):
            queues.select_add(pinned_queue(name, settings.CRAWLER_NUM))
