"""`GET /metrics`: the Prometheus text exposition (format 0.0.4), behind the API's authentication
(a reader's session, not one limited to server groups, or `Authorization: Bearer <CRAWLADMIN_API_TOKEN>`,
crawladmin.api.api_view).

Gauges only, from the same cheap reads as the dashboard: URL counts by state (at most a minute old), servers by
monitoring status, checks per second over the last minute by category and agent (an id-bounded range
of StatusCheck, never a scan of the table), queue lengths when the broker is Redis.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from alerts.selectors import notification_counts
from crawladmin.api import api_view
from crawlcore.models import Link, Page, Server, StatusCheck

from . import broker, selectors
from .cache import cached

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _label(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Exposition:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def gauge(self, name: str, help_text: str, samples: list[tuple[dict[str, str], float]]) -> None:
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for labels, value in samples:
            inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            self.lines.append(f"{name}{{{inner}}} {value:g}" if inner else f"{name} {value:g}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def metrics_text() -> str:
    out = Exposition()
    urls = selectors.url_state_counts()
    out.gauge(
        "crawladmin_urls",
        "URLs by life-cycle state (excluded ones apart); counted at most a minute ago.",
        [({"state": s}, n) for s, n in urls["states"].items()],
    )
    out.gauge(
        "crawladmin_urls_excluded", "URLs set aside (robots.txt, scope, excluded server).", [({}, urls["excluded"])]
    )
    out.gauge(
        "crawladmin_servers_by_status",
        "Servers by confirmed monitoring status (maintenance while a window is open; unmonitored apart).",
        [({"status": s}, n) for s, n in selectors.monitor_status_counts().items()],
    )
    rates = selectors.check_rates(seconds=60)
    out.gauge(
        "crawladmin_checks_per_second",
        "Status checks per second over the last minute, by category.",
        [({"category": c}, r) for c, r in rates["by_category"].items()],
    )
    out.gauge(
        "crawladmin_checks_per_second_by_agent",
        "Status checks per second over the last minute, by agent.",
        [({"agent": a}, r) for a, r in rates["by_agent"].items()],
    )
    out.gauge(
        "crawladmin_notifications",
        "Alert notifications per channel by outcome: sent, failed (attempts spent), pending, sending.",
        [({"channel": c, "status": s}, n) for (c, s), n in sorted(notification_counts().items())],
    )
    queues = broker.queue_lengths()
    out.gauge(
        "crawladmin_broker_up",
        "1 when the Redis broker answered the queue-length query; 0 otherwise (or the embedded broker).",
        [({}, 0 if queues is None else 1)],
    )
    if queues is not None:
        out.gauge(
            "crawladmin_queue_length",
            "Messages waiting per Celery queue.",
            [({"queue": q}, n) for q, n in queues.items()],
        )
    estimates = cached(
        "table_estimates",
        30.0,
        lambda: [
            ({"table": m._meta.model_name}, selectors.table_estimate(m)) for m in (Server, Page, Link, StatusCheck)
        ],
    )
    out.gauge(
        "crawladmin_table_rows_estimate", "Rows per table (PostgreSQL's planner estimate; exact on SQLite).", estimates
    )
    return out.text()


@api_view(whole_crawl=True)
def metrics(request: HttpRequest) -> HttpResponse:
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE)
