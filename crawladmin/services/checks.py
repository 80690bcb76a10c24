"""Recording status checks: every request the crawler makes becomes one StatusCheck row."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from crawladmin.models import StatusCheck
from crawler.fetch import FetchResult
from crawler.lifecycle import Agent
from crawler.status import categorize


def check_record(*, result: FetchResult, server_id: int, url_id: int | None, agent: Agent) -> StatusCheck:
    t = result.timings
    return StatusCheck.objects.create(
        url_id=url_id,
        server_id=server_id,
        requested_url=result.url,
        method=result.method,
        checked_at=timezone.now(),
        status_code=result.status,
        # A response whose body never arrived whole is a disconnect, whatever its status line said.
        category=categorize(
            None if result.incomplete else result.status, t.total_ms / 1000.0, settings.CRAWL_DELAY_THRESHOLD
        ).value,
        failure_kind=result.failure.value if result.failure else "",
        detail=result.detail[:300],
        latency_ms=t.total_ms,
        dns_ms=t.dns_ms,
        connect_ms=t.connect_ms,
        first_byte_ms=t.first_byte_ms,
        body_ms=t.body_ms,
        bytes=result.bytes_received,
        agent=agent.value,
        crawler_num=settings.CRAWLER_NUM,
    )
