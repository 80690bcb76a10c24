"""The queue table (crawlcore/queues.py): names that docker/ and operators rely on, and the pinned rule."""

from __future__ import annotations

import pytest

from crawlcore.queues import PINNABLE, TASK_ROUTES, Queue, celery_task_routes, crawler_num_of, pinned_queue


def test_queue_names_are_the_published_ones():
    assert [q.value for q in Queue] == [
        "load", "extract", "active_scan", "inactive_scan", "housekeeping", "monitor", "render"
    ]  # fmt: skip


def test_a_pinned_queue_carries_its_crawler_number_and_an_unpinned_one_is_the_plain_queue():
    assert pinned_queue(Queue.LOAD, 3) == "load.c3"
    assert pinned_queue(Queue.MONITOR, 0) == "monitor.c0"
    assert pinned_queue(Queue.ACTIVE_SCAN, None) == "active_scan"
    assert type(pinned_queue(Queue.ACTIVE_SCAN, None)) is str


@pytest.mark.parametrize("queue", PINNABLE)
def test_the_crawler_number_is_read_back_off_every_pinnable_queue(queue):
    assert crawler_num_of(pinned_queue(queue, 12)) == 12
    assert crawler_num_of(queue.value) is None


def test_queues_that_are_not_one_servers_work_have_no_pinned_variant():
    assert crawler_num_of("extract.c1") is None
    assert crawler_num_of("housekeeping.c1") is None


def test_settings_route_every_task_by_the_table(settings):
    assert settings.CELERY_TASK_ROUTES == celery_task_routes()
    assert settings.CELERY_TASK_DEFAULT_QUEUE == "housekeeping"
    assert {q.value for q in TASK_ROUTES.values()} == {q.value for q in Queue}


class _Queues:
    def __init__(self, consumed: list[str]) -> None:
        self.consume_from = dict.fromkeys(consumed)
        self.added: list[str] = []

    def select_add(self, name: str) -> None:
        self.added.append(name)


def _worker(consumed: list[str]):
    from types import SimpleNamespace

    queues = _Queues(consumed)
    return SimpleNamespace(app=SimpleNamespace(amqp=SimpleNamespace(queues=queues))), queues


@pytest.mark.parametrize(
    ("consumed", "added"),
    [
        (["load"], ["load.c4"]),
        (["monitor"], ["monitor.c4"]),
        (["active_scan", "inactive_scan"], ["active_scan.c4", "inactive_scan.c4"]),
        (["extract", "housekeeping"], []),
    ],
)
def test_a_worker_with_a_crawler_number_also_consumes_its_pinned_queues(settings, consumed, added):
    from crawladmin.celery import _consume_pinned_queues

    settings.CRAWLER_NUM = 4
    worker, queues = _worker(consumed)
    _consume_pinned_queues(sender="w@h", instance=worker)
    assert queues.added == added


def test_a_worker_without_a_crawler_number_consumes_no_pinned_queue(settings):
    from crawladmin.celery import _consume_pinned_queues

    settings.CRAWLER_NUM = None
    worker, queues = _worker([q.value for q in Queue])
    _consume_pinned_queues(sender="w@h", instance=worker)
    assert queues.added == []


def test_the_embedded_worker_checks_pinned_servers_from_the_plain_monitor_queue(settings):
    from monitoring.services.check_dispatch import monitor_queue

    settings.CELERY_EMBEDDED = False
    assert monitor_queue(5) == "monitor.c5"
    settings.CELERY_EMBEDDED = True
    assert monitor_queue(5) == "monitor"
