"""The monthly uptime / SLA report (``manage.py uptime_report``, the dashboard's uptime page): one row per
monitored server of a month, from the status timeline (monitoring.sla) and the checks' latency.

Maintenance windows are left out of every figure (the report says so). Latency is that of the month's
answered checks (normal or delay; heartbeats have none) while the raw checks are kept
(MONITOR_RAW_RETENTION_DAYS); for a month whose checks are gone, the hourly rollups': their mean weighted
by checks, and as p95 the check-weighted 95th percentile of the hours' p95 (an approximation).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from crawlcore.models import StatusCheck
from crawler.brokenlinks import report_cell
from crawler.lifecycle import Agent
from crawler.status import Category

from .check_stats import percentile
from .kinds import Kind
from .models import HourlyRollup, MaintenanceWindow, ServerMonitor, StatusChange
from .sla import period_uptime

COLUMNS = (
    "server", "group", "month", "uptime_percent", "downtime_seconds", "incidents", "longest_incident_seconds",
    "mean_latency_ms", "p95_latency_ms", "sla_target", "sla_met",
)  # fmt: skip
FORMATS = ("csv", "json")
MAINTENANCE_NOTE = "maintenance windows are excluded: neither downtime nor counted time"
_MONTH = re.compile(r"(\d{4})-(\d{2})")


class ReportError(ValueError):
    pass


@dataclass(frozen=True)
class Report:
    month: str
    start: datetime
    end: datetime  # exclusive; now, for the month under way
    rows: list[dict]

    def text(self) -> str:
        """The rows as a plain-text table, for a message."""
        lines = [f"{'server':<40} {'uptime %':>9} {'down s':>8} {'incidents':>9} {'SLA':>6} met"]
        for r in self.rows:
            up = "-" if r["uptime_percent"] is None else f"{r['uptime_percent']:.3f}"
            target = "-" if r["sla_target"] is None else f"{r['sla_target']:g}"
            met = {True: "yes", False: "NO", None: "-"}[r["sla_met"]]
            down, n = r["downtime_seconds"], r["incidents"]
            lines.append(f"{r['server'][:40]:<40} {up:>9} {down:>8} {n:>9} {target:>6} {met}")
        return "\n".join(lines) + "\n"


def month_bounds(month: str | None, now: datetime | None = None) -> tuple[str, datetime, datetime]:
    """("YYYY-MM", first instant, first instant of the next month), in the operator's TIME_ZONE; the
    current month when `month` is None."""
    now = timezone.localtime(now or timezone.now())
    if month is None:
        year, mon = now.year, now.month
    else:
        found = _MONTH.fullmatch(month.strip())
        if not found or not 1 <= int(found[2]) <= 12 or int(found[1]) < 1970:
            raise ReportError(f"month {month!r}: expected YYYY-MM, e.g. 2026-03")
        year, mon = int(found[1]), int(found[2])
    tz = timezone.get_current_timezone()
    start = datetime(year, mon, 1, tzinfo=tz)
    end = datetime(year + (mon == 12), mon % 12 + 1, 1, tzinfo=tz)
    return f"{year:04d}-{mon:02d}", start, end


def uptime_report(
    *,
    month: str | None = None,
    group: str | None = None,
    groups: Iterable[str] | None = None,
    server_ids: Iterable[int] | None = None,
    now: datetime | None = None,
) -> Report:
    """The report's rows, one per enabled monitor (of `group`; of `groups` for a reader limited to them; of
    these servers)."""
    now = now or timezone.now()
    label, start, month_end = month_bounds(month, now)
    end = min(month_end, now)
    monitors = ServerMonitor.objects.filter(enabled=True).select_related("server")
    if group is not None:
        monitors = monitors.filter(server__group=group)
    if groups is not None:
        monitors = monitors.filter(server__group__in=list(groups))
    if server_ids is not None:
        monitors = monitors.filter(server_id__in=list(server_ids))
    monitors = list(monitors.only("server_id", "kind", "name", "sla_target", *_SERVER))
    if end <= start:  # a month still to come
        return Report(label, start, month_end, [])
    ids = [m.server_id for m in monitors]
    before = _status_before(ids, start)
    changes = _changes(ids, start, end)
    windows = _maintenance(ids, start, end)
    latency = _latency(ids, start, end, windows)
    rows = []
    for m in sorted(monitors, key=lambda m: (m.server.group, m.shown_name)):
        figures = period_uptime(
            start=start,
            end=end,
            status_before=before.get(m.server_id, "unknown"),
            changes=changes.get(m.server_id, ()),
            maintenance=windows.get(m.server_id, ()),
        )
        up = figures.uptime_percent
        mean, p95 = (None, None) if m.kind == Kind.HEARTBEAT.value else latency.get(m.server_id, (None, None))
        rows.append(
            {
                "server": m.shown_name,
                "group": m.server.group,
                "month": label,
                "uptime_percent": None if up is None else round(up, 4),
                "downtime_seconds": round(figures.downtime_s),
                "incidents": figures.incidents,
                "longest_incident_seconds": round(figures.longest_incident_s),
                "mean_latency_ms": None if mean is None else round(mean, 1),
                "p95_latency_ms": None if p95 is None else round(p95, 1),
                "sla_target": m.sla_target,
                "sla_met": None if m.sla_target is None or up is None else up >= m.sla_target,
            }
        )
    return Report(label, start, month_end, rows)


_SERVER = ("server__scheme", "server__host", "server__port", "server__group")


def _status_before(ids: Sequence[int], start: datetime) -> dict[int, str]:
    """Each server's confirmed status at `start`: the last change before it."""
    out: dict[int, tuple[datetime, int, str]] = {}
    rows = StatusChange.objects.filter(server_id__in=ids, at__lt=start).values_list(
        "server_id", "at", "id", "to_status"
    )
    for sid, at, pk, to in rows.order_by("server_id", "at", "id"):
        out[sid] = (at, pk, to)
    return {sid: v[2] for sid, v in out.items()}


def _changes(ids: Sequence[int], start: datetime, end: datetime) -> dict[int, list[tuple[datetime, str]]]:
    out: dict[int, list[tuple[datetime, str]]] = defaultdict(list)
    rows = StatusChange.objects.filter(server_id__in=ids, at__gte=start, at__lt=end)
    for sid, at, to in rows.order_by("server_id", "at", "id").values_list("server_id", "at", "to_status"):
        out[sid].append((at, to))
    return out


def _maintenance(ids: Sequence[int], start: datetime, end: datetime) -> dict[int, list[tuple[datetime, datetime]]]:
    out: dict[int, list[tuple[datetime, datetime]]] = defaultdict(list)
    rows = MaintenanceWindow.objects.filter(server_id__in=ids, starts_at__lt=end, ends_at__gt=start)
    for sid, s, e in rows.values_list("server_id", "starts_at", "ends_at"):
        out[sid].append((s, e))
    return out


def _latency(ids, start, end, windows) -> dict[int, tuple[float, float]]:
    """(mean, p95) ms of each server's answered checks in [start, end), outside maintenance."""
    answered = [Category.NORMAL.value, Category.DELAY.value]
    checks = StatusCheck.objects.filter(
        server_id__in=ids, checked_at__gte=start, checked_at__lt=end, agent=Agent.MONITOR.value, category__in=answered
    )
    values: dict[int, list[float]] = defaultdict(list)
    for sid, at, ms in checks.values_list("server_id", "checked_at", "latency_ms").iterator(chunk_size=5000):
        if not any(s <= at < e for s, e in windows.get(sid, ())):
            values[sid].append(ms)
    out = {}
    for sid, ms in values.items():
        ms.sort()
        out[sid] = (sum(ms) / len(ms), percentile(ms, 95))
    missing = [sid for sid in ids if sid not in out]
    if missing:
        out.update(_rollup_latency(missing, start, end))
    return out


def _rollup_latency(ids, start, end) -> dict[int, tuple[float, float]]:
    hours: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    rows = HourlyRollup.objects.filter(server_id__in=ids, hour__gte=start, hour__lt=end, timed__gt=0)
    rows = rows.filter(~Q(latency_mean_ms=None))
    for sid, mean, p95, n in rows.values_list("server_id", "latency_mean_ms", "latency_p95_ms", "timed"):
        hours[sid].append((mean, p95 if p95 is not None else mean, n))
    out = {}
    for sid, hs in hours.items():
        total = sum(n for _, _, n in hs)
        mean = sum(m * n for m, _, n in hs) / total
        ordered = sorted((p, n) for _, p, n in hs)
        seen, p95 = 0, ordered[-1][0]
        for p, n in ordered:
            seen += n
            if seen >= 0.95 * total:
                p95 = p
                break
        out[sid] = (mean, p95)
    return out


def report_write(report: Report, fmt: str) -> str:
    """The report as CSV (the header, a row per server) or JSON (the rows with the month and the note)."""
    if fmt == "json":
        return json.dumps(
            {"month": report.month, "maintenance": MAINTENANCE_NOTE, "columns": list(COLUMNS), "servers": report.rows},
            indent=2,
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in report.rows:
        writer.writerow([report_cell(row[c]) for c in COLUMNS])
    return out.getvalue()
