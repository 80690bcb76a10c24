"""The Celery app. Workers: `celery -A crawladmin worker -Q load` (or extract, housekeeping)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import celeryd_after_setup

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")

app = Celery("crawladmin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.imports = ("tasks.load", "tasks.extract", "tasks.housekeeping", "tasks.monitor", "tasks.scan", "tasks.rank")


@celeryd_after_setup.connect
def _consume_pinned_queue(sender, instance, **kwargs) -> None:
    """A worker started with CRAWLER_NUM=n on the load (or a scan) queue also takes the servers pinned to n."""
    from django.conf import settings

    from crawladmin.services.queue import SERVER_QUEUES, pinned_queue

    queues = instance.app.amqp.queues
    for name in SERVER_QUEUES:
        if settings.CRAWLER_NUM is not None and name in (queues.consume_from or {}):
            queues.select_add(pinned_queue(name, settings.CRAWLER_NUM))
