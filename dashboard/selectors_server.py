"""Reads for one server's page, made on every view: hand-written SQL (crawlcore.db.raw) over the
(server, checked_at) index, the hourly rollups and the server's ServerRollup row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from crawlcore.db import features, raw
from crawlcore.models import Server, StatusCheck
from crawlcore.selectors import check_time_floor
from crawlcore.templatetags.times import when_text
from crawler.lifecycle import Agent, State
from monitoring.models import HourlyRollup, ServerMonitor, StatusChange
from monitoring.selectors import hour_floor, uptime_counts, uptime_of

from . import rollups
from .charts import JSON_SCRIPT_ESCAPES, ChartData
from .formats import ms
from .models import ServerRollup
from .selectors_grid import LAST_CHECK_WINDOW, TIMED

SERVER_ANSWERS = rollups.SERVER_ANSWERS
RANGES = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
SERVER_ROLLUP_MAX_AGE = 300.0


def server_latency_series(*, server_id: int, range_name: str, now: datetime | None = None) -> dict:
    """The latency chart's data. Labels are ISO times (UTC); the page draws them on a time axis, in the
    operator's zone.

    Over the last hour, each check (the monitor's, when it has any): `series.latency` holds the latency of
    the checks that got an HTTP answer and None for the others (a timeout's "latency" is how long we
    waited, not a response time: drawn as a gap and a failure marker, never as a point on the line);
    `categories` and `kinds` (the failure kind, or "HTTP 503") say what each check was.
    Over longer ranges, the hourly rollups: mean, p95 and max of the answered checks, and `failed`, the
    hour's failed checks, {"disconnect": [...], "error": [...]}."""
    now = now or timezone.now()
    span = RANGES[range_name]
    if range_name == "1h":
        answers = raw.placeholders(SERVER_ANSWERS)
        sql = (
            f"SELECT checked_at, latency_ms, category, status_code, failure_kind FROM {raw.table(StatusCheck)}"
            f" WHERE server_id = %s AND checked_at >= %s AND category IN ({answers}) {{agent}}"
            " ORDER BY checked_at LIMIT 5000"
        )
        params = [server_id, now - span, *SERVER_ANSWERS]
        rows = raw.fetch(sql.format(agent="AND agent = %s"), [*params, Agent.MONITOR.value], datetimes=["checked_at"])
        if not rows:
            rows = raw.fetch(sql.format(agent=""), params, datetimes=["checked_at"])
        return {
            "kind": "checks",
            "labels": [r["checked_at"].isoformat() for r in rows],
            "series": {"latency": [round(r["latency_ms"], 1) if answered(r) else None for r in rows]},
            "categories": [r["category"] for r in rows],
            "kinds": [_outcome(r) for r in rows],
        }
    rows = raw.fetch_rows(
        f"SELECT {raw.iso_utc('hour')}, latency_mean_ms, latency_p95_ms, latency_max_ms, disconnect, error"
        f" FROM {raw.table(HourlyRollup)} WHERE server_id = %s AND hour > %s ORDER BY hour",
        [server_id, hour_floor(now) - span],
    )
    # A month is 720 points: one pass over plain tuples, the labels already text.
    labels, mean, p95, top, down, err = [], [], [], [], [], []
    for label, m, p, x, d, e in rows:
        labels.append(label)
        mean.append(None if m is None else round(m, 1))
        p95.append(None if p is None else round(p, 1))
        top.append(None if x is None else round(x, 1))
        down.append(d)
        err.append(e)
    return {
        "kind": "rollups",
        "labels": labels,
        "series": {"mean": mean, "p95": p95, "max": top},
        "categories": [],
        "failed": {"disconnect": down, "error": err},
    }


def answered(check: dict) -> bool:
    """A check whose time is a response time: an HTTP answer, or a TCP connect or DNS lookup that passed
    (they have no status code). A failure's time is how long we waited, never a latency."""
    return check["status_code"] is not None or check["category"] in TIMED


def _outcome(check: dict) -> str:
    """What a check got: "HTTP 200", "passed" (TCP, DNS, heartbeat), or the failure kind of one with no
    answer ("header_timeout")."""
    if check["status_code"] is not None:
        return f"HTTP {check['status_code']}"
    if check["category"] in TIMED:
        return "passed"
    return check["failure_kind"] or "no answer"


def server_latency_chart(*, server_id: int, range_name: str, now: datetime | None = None) -> ChartData:
    """server_latency_series as JSON. On PostgreSQL the hourly ranges are written as JSON by the database
    itself: a month is 720 points in three series, and rounding and encoding them in Python was a third of
    the server page's cost (bench.dashboard). The values are server_latency_series's, rounded by
    PostgreSQL's numeric rounding (1092.55 → 1092.6 where Python's float gives 1092.5)."""
    now = now or timezone.now()
    if range_name == "1h" or not features.json_aggregates():
        series = server_latency_series(server_id=server_id, range_name=range_name, now=now)
        text = json.dumps(series, separators=(",", ":"))
        # Every check or hour counts, answered or not: a server that only timed out has a chart of failures.
        return ChartData(series["kind"], len(series["labels"]), text.translate(JSON_SCRIPT_ESCAPES))

    def agg(expr: str) -> str:
        return f"coalesce(json_agg({expr} ORDER BY hour), '[]')::text"

    def rounded(column: str) -> str:
        return f"round({column}::numeric, 1)"

    [(points, labels, mean, p95, top)] = raw.fetch_rows(
        f"SELECT count(latency_mean_ms), {agg(raw.iso_utc('hour'))}, {agg(rounded('latency_mean_ms'))},"
        f" {agg(rounded('latency_p95_ms'))}, {agg(rounded('latency_max_ms'))}"
        f" FROM {raw.table(HourlyRollup)} WHERE server_id = %s AND hour > %s",
        [server_id, hour_floor(now) - RANGES[range_name]],
    )
    text = f'{{"kind":"rollups","labels":{labels},"series":{{"mean":{mean},"p95":{p95},"max":{top}}},"categories":[]}}'
    return ChartData("rollups", points, text.translate(JSON_SCRIPT_ESCAPES))


def server_recent_checks(*, server_id: int, limit: int = 60, timed: bool = True, monitored: bool = False) -> list[dict]:
    """The server's newest checks, oldest first (the bar reads left to right): each a dict of the check's
    fields, plus `latency` formatted and `summary`, the line its bar segment shows on hover. A monitored
    server's are its monitor's checks only: a crawled page's 404 says nothing of whether the server is up."""
    agent = f"AND agent = '{Agent.MONITOR.value}'" if monitored else ""
    sql = (
        "SELECT checked_at, status_code, category, failure_kind, detail, latency_ms, agent, requested_url"
        f" FROM {raw.table(StatusCheck)} WHERE server_id = %s {agent} {{since}}"
        " ORDER BY checked_at DESC, id DESC LIMIT %s"
    )
    # Partitioned by time: the last LAST_CHECK_WINDOW's partitions first, every partition only when they
    # do not hold `limit` checks of the server.
    floor = check_time_floor(timezone.now() - LAST_CHECK_WINDOW)
    rows = []
    if floor is not None:
        rows = raw.fetch(sql.format(since="AND checked_at >= %s"), [server_id, floor, limit], datetimes=["checked_at"])
    if len(rows) < limit:
        rows = raw.fetch(sql.format(since=""), [server_id, limit], datetimes=["checked_at"])
    rows.reverse()
    for c in rows:  # formatted here once: the page shows each check twice, and template filters cost more
        # A check with no answer has no latency (latency_ms is how long we waited): never "2003 ms". A
        # heartbeat (timed=False) has none at all: its check reads the last ping's time.
        if not timed:
            c["latency"] = "–"
        else:
            c["latency"] = ms(c["latency_ms"]) if answered(c) else "no answer"
        outcome = c["status_code"] if c["status_code"] is not None else _outcome(c)
        c["summary"] = (
            f"{c['checked_at'].isoformat()} · {c['agent']} · {outcome} · {c['latency']} · {c['requested_url']}"
        )
    return rows


def _local(at: datetime) -> str:
    return when_text(at)


def server_timeline_recent(*, server_id: int, limit: int = 100) -> list[dict]:
    """The server's confirmed status changes, newest first: at (formatted), from_status, to_status, reason."""
    rows = raw.fetch(
        f"SELECT at, from_status, to_status, reason FROM {raw.table(StatusChange)}"
        " WHERE server_id = %s ORDER BY at DESC, id DESC LIMIT %s",
        [server_id, limit],
        datetimes=["at"],
    )
    for row in rows:
        row["at"] = _local(row["at"])
    return rows


@dataclass
class ServerHead:
    """What the top of a server's page shows: the server and its monitor row (None: not monitored). What
    the server shows is server_shown_status's, the one rule."""

    server: Server
    monitor: dict | None  # status, status_since, load_profile


def server_head(*, server_id: int) -> ServerHead | None:
    """The server and its monitor, in one query; None when there is no such server."""
    rows = raw.fetch(
        'SELECT s.id, s.scheme, s.host, s.port, s.ip, s."group", s.crawler_num, s.enabled, s.excluded_reason,'
        " m.server_id AS monitored, m.status, m.status_since, s.load_profile"
        f" FROM {raw.table(Server)} s LEFT JOIN {raw.table(ServerMonitor)} m ON m.server_id = s.id"
        " WHERE s.id = %s",
        [server_id],
        datetimes=["status_since"],
        jsons=["load_profile"],
    )
    if not rows:
        return None
    row = rows[0]
    fields = ("id", "scheme", "host", "port", "ip", "group", "crawler_num", "enabled", "excluded_reason")
    server = Server(**{f: row[f] for f in fields})
    server.enabled = bool(server.enabled)  # SQLite: 0/1
    if row["monitored"] is None:
        return ServerHead(server, None)
    return ServerHead(server, {k: row[k] for k in ("status", "status_since", "load_profile")})


def server_figures(*, server_id: int, now: datetime | None = None) -> dict:
    """The server's URLs by state (every state present), failing URLs and failed checks by failure kind,
    uptime per window (monitoring's Uptime), as of `as_of`: from its ServerRollup (beat, every minute)
    while that is younger than SERVER_ROLLUP_MAX_AGE, else counted now (a new server, beat late, the
    embedded mode)."""
    now = now or timezone.now()
    figures = ("url_states", "failing_url_kinds", "check_failure_kinds")
    rows = raw.fetch(
        f"SELECT {', '.join(figures)}, check_days, computed_at FROM {raw.table(ServerRollup)}"
        " WHERE server_id = %s AND computed_at >= %s",
        [server_id, now - timedelta(seconds=SERVER_ROLLUP_MAX_AGE)],
        datetimes=["computed_at"],
        jsons=figures,
    )
    if rows:
        row = rows[0]
    else:
        live = rollups.server_figures_compute(server_ids=[server_id], now=now).get(server_id, {})
        row = {
            "url_states": live.get("url_states", {}),
            "failing_url_kinds": live.get("failing_url_kinds", []),
            "check_failure_kinds": live.get("check_failure_kinds", []),
            "check_days": rollups.CHECK_FAILURE_DAYS,
            "computed_at": now,
        }
    return {
        "url_states": {
            **{s.value: row["url_states"].get(s.value, 0) for s in State},
            **{k: n for k, n in sorted(row["url_states"].items()) if k.startswith(rollups.EXCLUDED_PREFIX)},
        },
        "failing_url_kinds": row["failing_url_kinds"],
        "check_failure_kinds": row["check_failure_kinds"],
        "days": row["check_days"],
        # Uptime is read live, not from the rollup: a failed check must lower it at once (uptime_counts).
        "uptime": uptime_of(uptime_counts(server_ids=[server_id], now=now).get(server_id)),
        "as_of": row["computed_at"],
    }
