"""The Celery app. Workers: `celery -A crawladmin worker -Q load` (or extract, housekeeping)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import celeryd_after_setup

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")

app = Celery("crawladmin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.imports = ("tasks.load", "tasks.extract", "tasks.housekeeping")


@celeryd_after_setup.connect
def _consume_pinned_queue(sender, instance, **kwargs) -> None:
    """A worker started with CRAWLER_NUM=n on the load queue also takes the servers pinned to n."""
    from django.conf import settings

    from crawladmin.services.queue import load_queue

    queues = instance.app.amqp.queues
    if settings.CRAWLER_NUM is not None and "load" in (queues.consume_from or {}):
        queues.select_add(load_queue(settings.CRAWLER_NUM))
