"""The one writer of a server's health record (crawlcore.models.ServerHealth; rules: crawler.hosthealth).

* the operator: `health_pause` (until a time, or until `health_resume`);
* the monitor: `health_hold(source="monitor")` on a confirmed outage, `health_release(source="monitor")` on
  its confirmed recovery, which also lifts what the outage caused (robots.txt unanswered, a header-less 503
  back-off) so the crawl resumes at once;
* robots.txt: `health_hold(source="robots")` when it answers 5xx or not at all, `health_release` when it
  answers again;
* the crawl: `health_rate_limited` on 429 / 503, `health_record_responses` at the end of each visit (the
  pace), `health_probe_take` / `health_probe_done` for the one probe request a held server gets per window.

Each write locks the row (SELECT … FOR UPDATE; SQLite's IMMEDIATE transaction does the same), changes its
own party's columns, and writes the summary the parts now give, with an event row when the state or the
source changed (the history the server page shows)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from crawlcore.models import Server, ServerHealth, ServerHealthEvent, Url
from crawlcore.selectors_health import SERVER_FIELDS, parts_of
from crawler.hosthealth import BackoffRule, HealthSource, HealthState, Pace, PaceRule, pace, probe_window, summary
from crawler.lifecycle import State

log = logging.getLogger(__name__)

# Verdicts of health_admit.
GO, PROBE, HELD = "go", "probe", "held"


class HealthError(ValueError):
    """An operator's request that cannot be done (an unknown source, an `until` in the past)."""


def backoff_rule() -> BackoffRule:
    return BackoffRule(
        base=settings.CRAWL_BACKOFF_BASE,
        cap=max(settings.CRAWL_BACKOFF_BASE, settings.CRAWL_BACKOFF_MAX),
        forgive=settings.CRAWL_BACKOFF_FORGIVE,
        retry_after_cap=settings.CRAWL_RETRY_AFTER_MAX,
    )


def pace_rule() -> PaceRule:
    return PaceRule(factor=settings.CRAWL_PACE_FACTOR, window=settings.CRAWL_PACE_WINDOW, cap=settings.CRAWL_MAX_DELAY)


def _write(
    server_ids: Iterable[int],
    change: Callable[[ServerHealth, Server, datetime], bool],
    now: datetime,
    *,
    create: bool = True,
) -> int:
    """Apply `change` to each server's locked record (made when missing, unless `create` is False: a release
    has nothing to do on a server with no record); write those it changed, with their new summary. Returns
    how many changed."""
    ids = sorted(set(server_ids))
    if not ids:
        return 0
    changed = 0
    with transaction.atomic():
        servers = Server.objects.only(*SERVER_FIELDS).in_bulk(ids)
        if create:
            ServerHealth.objects.bulk_create([ServerHealth(server_id=i) for i in servers], ignore_conflicts=True)
        # In id order, so two writers of the same servers cannot deadlock.
        rows = ServerHealth.objects.select_for_update().filter(server_id__in=list(servers)).order_by("server_id")
        for row in rows:
            server = servers[row.server_id]
            if not change(row, server, now):
                continue
            _summarize(row, server, now)
            row.save()
            changed += 1
    return changed


def _summarize(row: ServerHealth, server: Server, now: datetime) -> None:
    s = summary(parts_of(server, row), now)
    moved = s.state.value != row.state or s.source != row.source
    if moved:
        ServerHealthEvent.objects.create(
            server_id=row.server_id, at=now, state=s.state.value, source=s.source, reason=s.reason[:300], until=s.until
        )
        log.info("server %s: %s (%s) %s", server.id, s.state.value, s.source or "-", s.reason)
    row.state, row.source, row.reason, row.until = s.state.value, s.source, s.reason[:300], s.until
    row.since = (s.since or now) if moved or row.since is None else (s.since or row.since)
    row.updated_at = now


# -- operator ---------------------------------------------------------------------------------------------


def health_pause(
    *, server_ids: Iterable[int], by: str, until: datetime | None = None, note: str = "", now: datetime | None = None
) -> int:
    """An operator holds these servers' crawl until `until` (None: until resumed). Returns how many changed."""
    now = now or timezone.now()
    if until is not None and until <= now:
        raise HealthError(f"until {until.isoformat()} is not in the future")

    def change(row: ServerHealth, server: Server, now: datetime) -> bool:
        row.paused_at, row.paused_until, row.paused_by, row.pause_note = now, until, by[:150], note[:200]
        return True

    return _write(server_ids, change, now)


def health_resume(*, server_ids: Iterable[int], by: str, now: datetime | None = None) -> int:
    """An operator lifts their pause of these servers (the monitor's or the crawl's holds stay)."""
    now = now or timezone.now()

    def change(row: ServerHealth, server: Server, now: datetime) -> bool:
        if row.paused_at is None:
            return False
        log.info("server %s resumed by %s", server.id, by)
        row.paused_at, row.paused_until, row.paused_by, row.pause_note = None, None, "", ""
        return True

    return _write(server_ids, change, now, create=False)


# -- monitor and robots.txt: hold and release ------------------------------------------------------------


def health_hold(*, server_ids: Iterable[int], source: str, reason: str, now: datetime | None = None) -> int:
    """Hold these servers' crawl: the monitor confirmed them down (`source` "monitor"), or robots.txt did not
    answer ("robots"). One probe request goes to each per back-off window (health_probe_take)."""
    now = now or timezone.now()
    if source not in (HealthSource.MONITOR, HealthSource.ROBOTS):
        raise HealthError(f"hold by {source!r}: only the monitor or robots.txt hold a server")

    def change(row: ServerHealth, server: Server, now: datetime) -> bool:
        first = row.down_since is None and row.robots_since is None
        if source == HealthSource.MONITOR:
            if row.down_since is not None and row.down_reason == reason[:200]:
                return False
            row.down_since, row.down_reason = row.down_since or now, reason[:200]
        else:
            if row.robots_since is not None:
                return False
            row.robots_since, row.robots_reason = now, reason[:200]
        if first:
            row.probe_strikes = 0
            row.probe_at = now + probe_window(backoff_rule(), 0)
        return True

    return _write(server_ids, change, now)


def health_release(*, server_ids: Iterable[int], source: str, now: datetime | None = None) -> int:
    """Lift the hold of `source`. The monitor's confirmed recovery lifts what the outage caused as well: a
    robots.txt hold (robots.txt is asked again at once) and a header-less 503 back-off, and makes the server's
    next request due now; its next crawl request comes within the dispatcher's next round."""
    now = now or timezone.now()
    ids = list(server_ids)
    lifted: list[int] = []

    held: dict[int, datetime] = {}

    def change(row: ServerHealth, server: Server, now: datetime) -> bool:
        before = (row.down_since, row.robots_since, row.limited_until)
        started = [t for t in (row.down_since, row.robots_since) if t is not None]
        if source == HealthSource.MONITOR:
            row.down_since, row.down_reason = None, ""
            row.robots_since, row.robots_reason = None, ""
            if row.limited_until is not None and row.limited_status == 503 and not row.limited_asked:
                row.limited_until = None
        elif source == HealthSource.ROBOTS:
            row.robots_since, row.robots_reason = None, ""
        else:
            raise HealthError(f"release by {source!r}: only the monitor or robots.txt release a server")
        if (row.down_since, row.robots_since, row.limited_until) == before:
            return False
        if row.down_since is None and row.robots_since is None:
            row.probe_at, row.probe_strikes = None, 0
            if started:
                held[server.id] = min(started)
        lifted.append(server.id)
        return True

    n = _write(ids, change, now, create=False)
    if lifted and source == HealthSource.MONITOR:
        # robots.txt is asked again on the next visit, not after its retry period; the back-off that
        # spaced the next request is over.
        Server.objects.filter(id__in=lifted, robots_kind="unreachable").update(robots_fetched_at=None)
        Server.objects.filter(id__in=lifted, next_request_at__gt=now).update(next_request_at=now)
    _failed_urls_due(held, now)
    return n


# URLs that failed this long before a hold began are taken as failed by the outage too: the monitor confirms an
# outage some checks after it began.
OUTAGE_LEAD = timedelta(minutes=10)


def _failed_urls_due(held: dict[int, datetime], now: datetime) -> int:
    """The URLs of these servers that failed since their hold began (`held`: server → the hold's start) are
    due again now: they failed for the outage, not for themselves, and the server answers again; left on
    their NoResponse back-off, most of a site that was down for a minute would wait an hour or more."""
    n = 0
    for server_id, since in held.items():
        n += Url.objects.filter(
            server_id=server_id,
            state__in=(State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value),
            exclusion_reason="",
            last_checked_at__gte=since - OUTAGE_LEAD,
            next_check_at__gt=now,
        ).update(next_check_at=now)
    return n


# -- the crawl -------------------------------------------------------------------------------------------


def health_admit(*, server_id: int, now: datetime | None = None) -> str:
    """May a visit of this server start now? GO; PROBE (held down, and this visit takes the window's one
    probe request: a guarded UPDATE, so of two workers one probes); HELD."""
    now = now or timezone.now()
    row = (
        ServerHealth.objects.filter(server_id=server_id)
        .values("paused_at", "paused_until", "down_since", "robots_since", "probe_at", "probe_strikes",
                "limited_until")  # fmt: skip
        .first()
    )
    if row is None:
        return GO
    if row["paused_at"] is not None and (row["paused_until"] is None or row["paused_until"] > now):
        return HELD
    if row["limited_until"] is not None and row["limited_until"] > now:
        return HELD
    if row["down_since"] is None and row["robots_since"] is None:
        return GO
    if row["probe_at"] is not None and row["probe_at"] > now:
        return HELD
    # The window's probe: the next one is a window later (longer, if this one fails: health_probe_done).
    taken = (
        ServerHealth.objects.filter(server_id=server_id)
        .filter(Q(probe_at__isnull=True) | Q(probe_at__lte=now))
        .update(probe_at=now + probe_window(backoff_rule(), row["probe_strikes"]))
    )
    return PROBE if taken else HELD


def health_probe_done(*, server_id: int, answered: bool, now: datetime | None = None) -> None:
    """The probe's answer: a valid one lifts the hold it probed (the crawl goes on; the monitor, if its outage
    goes on, says so again at its next change); none widens the next window."""
    now = now or timezone.now()

    def change(row: ServerHealth, server: Server, now: datetime) -> bool:
        if row.down_since is None and row.robots_since is None:
            return False
        if answered:
            held[server.id] = min(t for t in (row.down_since, row.robots_since) if t is not None)
            row.down_since, row.down_reason, row.robots_since, row.robots_reason = None, "", None, ""
            row.probe_at, row.probe_strikes = None, 0
        else:
            row.probe_strikes += 1
            row.probe_at = now + probe_window(backoff_rule(), row.probe_strikes)
        return True

    held: dict[int, datetime] = {}
    _write([server_id], change, now, create=False)
    _failed_urls_due(held, now)


def health_rate_limited(
    *, server_id: int, status: int, retry_after: float | None, now: datetime | None = None
) -> datetime:
    """The server answered 429 or 503: nobody sends it a crawl request before the returned time. Its own
    Retry-After is honoured (up to CRAWL_RETRY_AFTER_MAX); without one, CRAWL_BACKOFF_BASE doubled on each
    repeat (forgiven after CRAWL_BACKOFF_FORGIVE quiet seconds), up to CRAWL_BACKOFF_MAX, ±10 %."""
    now = now or timezone.now()
    rule = backoff_rule()
    out: list[datetime] = []

    def change(row: ServerHealth, server: Server, now: datetime) -> bool:
        asked = rule.asked(retry_after)
        row.strikes = rule.strikes(row.strikes, row.limited_at, now)
        if asked is not None:
            wait = asked
            reason = f"HTTP {status} with Retry-After: waiting {wait:.0f} s as asked"
        else:
            wait = rule.seconds(row.strikes)
            nth = _ordinal(row.strikes)
            reason = f"HTTP {status} without Retry-After ({nth} in a row): backing off {wait:.0f} s"
        until = now + timedelta(seconds=wait)
        if row.limited_until is not None and row.limited_until > until:
            until = row.limited_until  # a longer wait already asked for stands
        row.limited_at, row.limited_until, row.limited_reason = now, until, reason[:200]
        row.limited_status, row.limited_asked = status, asked is not None
        out.append(until)
        return True

    _write([server_id], change, now)
    until = out[0] if out else now
    # The politeness turn too, of every server on its host and port (their turns are one: server_politeness_id):
    # a visit already under way on another slot waits for it as well.
    host, port = Server.objects.filter(id=server_id).values_list("host", "port").get()
    Server.objects.filter(scheme__in=("http", "https"), host=host, port=port).filter(
        Q(next_request_at__isnull=True) | Q(next_request_at__lt=until)
    ).update(next_request_at=until)
    return until


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def health_record_responses(
    *, server_id: int, samples: Sequence[float | None], now: datetime | None = None
) -> Pace | None:
    """A visit's answers (ms each; None for a timeout, a reset or a 5xx) join the server's window; the pace it
    then needs (delay ≥ CRAWL_PACE_FACTOR × p95, raised while new failures pile up) is stored and returned."""
    if not samples:
        return None
    now = now or timezone.now()
    rule = pace_rule()
    out: list[Pace] = []

    def change(row: ServerHealth, server: Server, now: datetime) -> bool:
        window = (list(row.window or []) + [None if s is None else round(s, 1) for s in samples])[-rule.window :]
        p = pace(window, rule=rule, base_delay=server.request_delay(), error_floor=row.error_floor, new=len(samples))
        slow_before = row.pace_delay > server.request_delay()
        row.window, row.p95_ms, row.error_share, row.error_floor, row.pace_delay = (
            window, p.p95_ms, p.error_share, p.error_floor, p.delay
        )  # fmt: skip
        slow_now = p.delay > server.request_delay()
        if slow_now and not slow_before:
            row.paced_since = now
        out.append(p)
        return True

    _write([server_id], change, now)
    return out[0] if out else None


def health_pace_delay(*, server_id: int) -> float:
    """The delay the server's pace asks for (0: none beyond politeness)."""
    found = ServerHealth.objects.filter(server_id=server_id).values_list("pace_delay", flat=True).first()
    return found or 0.0


__all__ = [
    "GO", "HELD", "PROBE", "HealthError", "HealthState", "health_admit", "health_hold", "health_pace_delay",
    "health_pause", "health_probe_done", "health_rate_limited", "health_record_responses", "health_release",
    "health_resume",
]  # fmt: skip
