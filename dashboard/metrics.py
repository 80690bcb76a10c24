"""`GET /metrics`: the Prometheus text exposition (format 0.0.4), behind the API's authentication
(a reader's session, not one limited to server groups, or `Authorization: Bearer <CRAWLADMIN_API_TOKEN>`,
dashboard.api_access.api_view).

Gauges only, from the same cheap reads as the dashboard: URL counts by state (at most a minute old), servers by
monitoring status, checks per second over the last minute by category and agent (an id-bounded range
of StatusCheck, never a scan of the table), queue lengths when the broker is Redis; and per monitored server
(the grid's own selector, so /metrics and the grid agree): up, the last answered check's latency and the
status the tile shows, labelled with the server, its group and its crawler number.

Cardinality is bounded: at most METRICS_MAX_SERVERS servers (worst status first, as the grid orders them)
get per-server series, one series per server and metric (the status is one series whose `status` label
changes, not one per possible status); crawladmin_server_series_dropped says how many were left out.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from alerts.selectors import notification_counts
from crawlcore.models import Link, Page, Server, StatusCheck
from crawlcore.selectors_health import health_counts

from . import broker, selectors_crawl, selectors_grid
from .api_access import api_view
from .cache import cached
from .selectors_crawl import table_estimate

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
METRICS_MAX_SERVERS = 2000  # three series each: a Prometheus server takes 6,000 series from us without notice
SERVER_SERIES_TTL = 15.0  # a scrape every 15 s is common; twenty scrapers cost one read
_UP = {"normal": 1, "delay": 1, "unconfirmed": 1, "disconnect": 0, "error": 0}  # unconfirmed: not down yet


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
    urls = selectors_crawl.url_state_counts()
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
        [({"status": s}, n) for s, n in selectors_grid.monitor_status_counts().items()],
    )
    out.gauge(
        "crawladmin_servers_by_health",
        "Servers by crawl health: healthy, slow, rate_limited, down, paused (crawlcore.selectors_health).",
        [({"state": s}, n) for s, n in cached("health_counts", 10.0, health_counts).items()],
    )
    rates = selectors_crawl.check_rates(seconds=60)
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
    _server_series(out)
    out.gauge(
        "crawladmin_notifications",
        "Alert notifications per channel by outcome: sent, failed (attempts spent), pending, sending.",
        [({"channel": c, "status": s}, n) for (c, s), n in sorted(notification_counts().items())],
    )
    runs = selectors_crawl.beat_runs()
    out.gauge(
        "crawladmin_beat_job_last_seconds",
        "How long each beat job's last run took; compare crawladmin_beat_job_period_seconds.",
        [({"job": r.name}, r.last_seconds) for r in runs],
    )
    out.gauge(
        "crawladmin_beat_job_period_seconds",
        "How often beat sends each job.",
        [({"job": r.name}, r.period_seconds) for r in runs],
    )
    out.gauge(
        "crawladmin_beat_job_over_period_runs",
        "Runs of each beat job that took longer than its period.",
        [({"job": r.name}, r.over_period) for r in runs],
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
        lambda: [({"table": m._meta.model_name}, table_estimate(m)) for m in (Server, Page, Link, StatusCheck)],
    )
    out.gauge(
        "crawladmin_table_rows_estimate", "Rows per table (PostgreSQL's planner estimate; exact on SQLite).", estimates
    )
    return out.text()


def _server_series(out: Exposition) -> None:
    def compute() -> tuple[int, list]:
        total, tiles = selectors_grid.grid_tiles(limit=METRICS_MAX_SERVERS, details=False)
        return total, [
            (
                t.origin,
                t.group,
                "" if t.crawler_num is None else str(t.crawler_num),
                t.status,
                t.latency_ms,
                t.cert_days,
            )
            for t in tiles
            if t.status != "unmonitored"
        ]

    total, rows = cached("metrics_servers", SERVER_SERIES_TTL, compute)

    def labels(origin: str, group: str, crawler: str) -> dict[str, str]:
        return {"server": origin, "group": group, "crawler": crawler}

    out.gauge(
        "crawladmin_server_up",
        "1 while the monitored server is confirmed up (normal, delay, or a failure not yet confirmed), 0 when"
        " confirmed down; absent while unknown, stale or in maintenance.",
        [(labels(o, g, c), _UP[s]) for o, g, c, s, _, _ in rows if s in _UP],
    )
    out.gauge(
        "crawladmin_server_latency_seconds",
        "Latency of the server's last check that got an HTTP answer.",
        [(labels(o, g, c), ms / 1000.0) for o, g, c, _, ms, _ in rows if ms is not None],
    )
    out.gauge(
        "crawladmin_server_status",
        "The status the dashboard shows for the server (label `status`), always 1.",
        [({**labels(o, g, c), "status": s}, 1) for o, g, c, s, _, _ in rows],
    )
    out.gauge(
        "crawladmin_server_certificate_days_left",
        "Days until the https certificate the last check saw expires (negative: expired).",
        [(labels(o, g, c), round(days, 2)) for o, g, c, _, _, days in rows if days is not None],
    )
    out.gauge(
        "crawladmin_server_series_dropped",
        f"Servers left without per-server series (beyond the first {METRICS_MAX_SERVERS}, worst first).",
        [({}, max(0, total - METRICS_MAX_SERVERS))],
    )


@api_view(whole_crawl=True)
def metrics(request: HttpRequest) -> HttpResponse:
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE)
