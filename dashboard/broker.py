"""What the broker and the workers say: queue lengths (Redis only) and the workers online.

Both are cached for a few seconds and bounded by short timeouts: a dashboard must render when Redis
is slow or gone, and twenty open dashboards must not broadcast twenty `inspect` calls a second.
"""

from __future__ import annotations

import logging

from django.conf import settings

from crawlcore.models import Server
from crawlcore.queues import PINNABLE, Queue, crawler_num_of, pinned_queue

from .cache import cached

log = logging.getLogger(__name__)

# kombu's Redis transport keeps a queue with priorities as one list per priority step; the default
# steps are 0, 3, 6, 9, and step 0 is the queue's own name.
PRIORITY_SEP = "\x06\x16"
PRIORITY_STEPS = (3, 6, 9)
TIMEOUT_S = 0.5


def broker_is_redis() -> bool:
    return settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://"))


def _redis():
    import redis

    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)


def queue_names() -> list[str]:
    """The agents' queues and the pinned queues of every crawler number servers are pinned to."""
    nums = sorted(set(Server.objects.exclude(crawler_num=None).values_list("crawler_num", flat=True)))
    pinned = [pinned_queue(q, n) for n in nums for q in PINNABLE]
    return [*(q.value for q in Queue), *pinned]


def queue_lengths() -> dict[str, int] | None:
    """Messages waiting per queue (LLEN over the queue's priority lists); None when the broker is not
    Redis (the embedded in-process broker has no shared queue to look at) or does not answer."""
    if not broker_is_redis():
        return None

    def compute() -> dict[str, int] | None:
        names = queue_names()
        try:
            client = _redis()
            pipe = client.pipeline(transaction=False)
            for name in names:
                pipe.llen(name)
                for step in PRIORITY_STEPS:
                    pipe.llen(f"{name}{PRIORITY_SEP}{step}")
            counts = pipe.execute()
        except Exception as exc:  # any Redis failure: show "unavailable", never fail the page
            log.warning("queue lengths: %s", exc)
            return None
        per = 1 + len(PRIORITY_STEPS)
        return {name: sum(counts[i * per : (i + 1) * per]) for i, name in enumerate(names)}

    return cached("queue_lengths", 5.0, compute)


def _inspect() -> list[dict]:
    from celery import current_app as app  # the project's app (crawladmin/celery.py), set up at start

    try:
        _redis().ping()  # fail fast: inspect over a dead broker would sit in kombu's connection retries
    except Exception as exc:
        log.warning("workers: broker unavailable: %s", exc)
        return []
    replies = app.control.inspect(timeout=TIMEOUT_S).active_queues() or {}
    workers = []
    for name, queues in sorted(replies.items()):
        names = sorted(q.get("name", "") for q in queues or [])
        nums = sorted({n for q in names if (n := crawler_num_of(q)) is not None})
        workers.append({"name": name, "queues": names, "crawler_nums": nums})
    return workers


def workers_online() -> list[dict] | None:
    """Workers answering `inspect active_queues` within TIMEOUT_S: name, queues, and the crawler numbers
    they serve (read off their pinned queues). None in the embedded mode, whose worker is a thread of
    the crawl command, not a process one can ask. Cached 30 s."""
    if not broker_is_redis():
        return None
    return cached("workers_online", 30.0, _inspect)
