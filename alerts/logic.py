"""Alerts, the pure part: which event a confirmed change is, who gets it, how a batch reads, when to retry.

No Django or Celery import: services persist what these functions decide.

* ``event_kind``: a confirmed status change (from, to) as an event kind (down, up, delay) or none.
* ``Route`` / ``routes_match``: routing rules (event kinds x all / group / server -> channel).
* ``message_compose``: many events for one channel as one message ("12 servers down in group campus: ...").
* ``retry_delay``: the back-off between delivery attempts.
* ``idempotency_key``: one key per message, the same however often it is re-sent.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


class Kind(enum.StrEnum):
    """What an event tells; the names are the --events values of add_channel."""

    DOWN = "down"
    UP = "up"  # recovered
    DELAY = "delay"
    CERT = "cert"
    CONTENT = "content"
    DOMAIN = "domain"  # a monitored domain's registration expires soon (RDAP)
    BEAT = "beat"  # one of beat's jobs takes longer than its period (late), or fits in it again (normal)
    # A crawl job's run (crawlcore.services.job_events): each told once a run, routed by the job and its group.
    JOB_STARTED = "job.started"
    JOB_FINISHED = "job.finished"
    JOB_STALLED = "job.stalled"
    JOB_BUDGET_REACHED = "job.budget_reached"
    # A freshness objective (crawlcore's FreshnessObjective) burns its error budget too fast, or no longer.
    FRESHNESS_BURN = "freshness.burn"
    FRESHNESS_RESTORED = "freshness.restored"
    TEST = "test"  # notify_test / "send test": never routed, sent to the one channel asked for


JOB_KINDS = (Kind.JOB_STARTED, Kind.JOB_FINISHED, Kind.JOB_STALLED, Kind.JOB_BUDGET_REACHED)
# Asked for by name, like a job's (a rule with no kinds named keeps taking the servers' events only).
FRESHNESS_KINDS = (Kind.FRESHNESS_BURN, Kind.FRESHNESS_RESTORED)
# What a rule with no kinds named takes: the servers' (and beat's) events. A crawl job's are asked for by
# name (or by a rule for one job, which takes all of them: alerts.services.channels).
ROUTABLE = (Kind.DOWN, Kind.UP, Kind.DELAY, Kind.CERT, Kind.CONTENT, Kind.DOMAIN, Kind.BEAT)
_FIXABLE = ("cert", "content", "beat")  # kinds told again, with to_status good, when the problem goes away
GOOD = frozenset({"normal", "delay"})
BAD = frozenset({"disconnect", "error"})


class KindsError(ValueError):
    pass


def kinds_parse(text: str) -> tuple[str, ...]:
    """``"down,up"`` -> ("down", "up"); empty means every routable kind. Unknown names are refused."""
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    if not names:
        return tuple(k.value for k in ROUTABLE)
    every = (*ROUTABLE, *JOB_KINDS, *FRESHNESS_KINDS)
    known = {k.value for k in every}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise KindsError(f"unknown event kind {', '.join(unknown)}; choose from {', '.join(k.value for k in every)}")
    return tuple(k.value for k in every if k.value in names)


_FAILURE_KINDS = {"tls": Kind.CERT.value, "content": Kind.CONTENT.value}


def event_kind(from_status: str, to_status: str, failure: str = "", last_bad_kind: str = "") -> str | None:
    """The event a confirmed change is. Down: into disconnect or error from anything not already bad (the
    first confirmed status counts: a server down from the start must be told); cert or content instead
    when the confirming check failed on its certificate (failure kind tls) or its content. Recovered: from
    bad back to good (cert or content again when that is what went wrong: `last_bad_kind`), or from delay
    back to normal. Delay: normal (or unknown) to delay. A change between the two bad categories, or
    unknown to normal, tells nobody anything new."""
    if to_status in BAD:
        return None if from_status in BAD else _FAILURE_KINDS.get(failure, Kind.DOWN.value)
    if from_status in BAD:
        return last_bad_kind if last_bad_kind in _FAILURE_KINDS.values() else Kind.UP.value
    if to_status == "delay":
        return Kind.DELAY.value
    if to_status == "normal" and from_status == "delay":
        return Kind.UP.value
    return None


# --------------------------------------------------------------------------------------------------
# Routing


@dataclass(frozen=True)
class Route:
    """One routing rule: these kinds of events of all servers (group and server empty), of one group,
    or of one server, go to a channel."""

    channel_id: int
    kinds: frozenset[str]
    group: str = ""
    server_id: int | None = None
    job: str = ""  # only this crawl job's events

    def matches(self, kind: str, server_id: int | None, group: str, job: str = "") -> bool:
        if kind not in self.kinds:
            return False
        if self.job:
            return self.job == job
        if self.server_id is not None:
            return self.server_id == server_id
        if self.group:
            return self.group == group
        return True


def routes_match(
    routes: Iterable[Route], *, kind: str, server_id: int | None, group: str, job: str = ""
) -> list[int]:
    """The channels an event goes to, each once however many rules match it, in id order. A crawl job's
    event (`job`: its name, `group`: the job's) matches the rules of that job, of its group and of all."""
    return sorted({r.channel_id for r in routes if r.matches(kind, server_id, group, job)})


# --------------------------------------------------------------------------------------------------
# Messages

_TITLES = {
    "down": "down",
    "up": "recovered",
    "delay": "slow",
    "cert": "certificate problem",
    "content": "content check failed",
    "domain": "domain registration expiring",
    "cert:fixed": "certificate valid again",
    "content:fixed": "content check passes again",
    "beat": "late",
    "beat:fixed": "on time again",
    **{k.value: k.value for k in JOB_KINDS},  # "job docs job.finished": the job's name and the event
    "freshness.burn": "freshness objective burning its budget",
    "freshness.restored": "freshness objective within its budget again",
}


# A heartbeat is not "disconnected": its job is late (missed its ping), failed, or back on time.
HEARTBEAT_WORDS = {
    "disconnect": "late, missed its ping",
    "error": "failed (the job reported a failure)",
    "delay": "late",
    "normal": "on time again (pinged)",
}


@dataclass(frozen=True)
class EventView:
    """What a message says about one event."""

    event_id: int
    kind: str
    server: str  # origin, e.g. https://www.example.org
    group: str
    at: str  # ISO 8601
    from_status: str = ""
    to_status: str = ""
    reason: str = ""
    locations: dict[str, str] = field(default_factory=dict)  # crawler number -> what it saw (quorum)
    monitor_kind: str = ""  # http, tcp, dns, heartbeat: a heartbeat's changes are told in its own words
    # What the server answered (monitoring.selectors_evidence.evidence_alert_lines: status, the body's start
    # with its control characters gone, the slowest phase) and the incident page's address; empty if none.
    answered: str = ""
    incident_url: str = ""

    def line(self) -> str:
        if not self.to_status:
            change = self.kind
        elif self.monitor_kind == "heartbeat" and self.to_status in HEARTBEAT_WORDS:
            change = HEARTBEAT_WORDS[self.to_status]
        elif self.from_status == self.to_status:  # a reminder: the reason says "still ..."
            change = self.to_status
        else:
            change = f"{self.from_status} -> {self.to_status}"
        text = f"{self.server}: {change}"
        if self.reason:
            text += f" ({self.reason})"
        if self.locations:
            text += "; seen by " + ", ".join(f"#{n}: {s}" for n, s in sorted(self.locations.items()))
        if self.answered:
            text += f"\n  {self.answered}"
        if self.incident_url:
            text += f"\n  incident: {self.incident_url}"
        return text

    def as_json(self) -> dict:
        return {
            "event_id": self.event_id,
            "kind": self.kind,
            "server": self.server,
            "group": self.group,
            "at": self.at,
            "from": self.from_status,
            "to": self.to_status,
            "reason": self.reason,
            "locations": dict(self.locations),
            "answered": self.answered,
            "incident_url": self.incident_url,
        }


@dataclass(frozen=True)
class Message:
    title: str
    body: str
    events: tuple[EventView, ...]
    key: str

    @property
    def failure(self) -> bool:
        return any(e.kind in ("down", *_FIXABLE) and e.to_status != "normal" for e in self.events)


MAX_LINES = 50  # a message lists at most this many servers; the rest are counted


def _headline(kind: str, events: Sequence[EventView]) -> str:
    groups = {e.group for e in events}
    where = f" in group {next(iter(groups))}" if len(groups) == 1 and next(iter(groups)) else ""
    word = _TITLES.get(kind, kind)
    if len(events) == 1:
        return f"{events[0].server} {word}"
    if kind.startswith("job."):  # few at a time, and each job's name is what the reader looks for
        return f"{', '.join(sorted({e.server for e in events}))} {word}"
    return f"{len(events)} {'beat jobs' if kind.startswith('beat') else 'servers'} {word}{where}"


def message_compose(events: Sequence[EventView], *, key: str) -> Message:
    """One message for a channel out of all its pending events, grouped by kind: the title names the
    largest group ("12 servers down in group campus"), the body lists every event by kind."""
    by_kind: dict[str, list[EventView]] = {}
    for e in sorted(events, key=lambda e: (e.at, e.server)):
        fixed = e.kind in _FIXABLE and e.to_status in GOOD  # the problem went away
        by_kind.setdefault(f"{e.kind}:fixed" if fixed else e.kind, []).append(e)
    order = sorted(by_kind, key=lambda k: (-len(by_kind[k]), k))
    title = "; ".join(_headline(k, by_kind[k]) for k in order)
    parts = []
    for k in order:
        evs = by_kind[k]
        parts.append(_headline(k, evs) + ":")
        parts += [f"- {e.line()}" for e in evs[:MAX_LINES]]
        if len(evs) > MAX_LINES:
            parts.append(f"- ... and {len(evs) - MAX_LINES} more")
    return Message(title=f"[crawladmin] {title}", body="\n".join(parts), events=tuple(events), key=key)


def cert_threshold_crossed(previous_days: float | None, days: float, thresholds: Sequence[int]) -> int | None:
    """The smallest threshold (days) the certificate's time left fell to since the previous check, or None.
    First sight counts as crossing every threshold above the days left; a renewed certificate crosses none."""
    crossed = [t for t in thresholds if days <= t and (previous_days is None or previous_days > t)]
    return min(crossed) if crossed else None


def idempotency_key(channel_id: int, notification_ids: Iterable[int]) -> str:
    """The same rows re-sent (after a failure or a killed sender) carry the same key, so a receiver can
    drop the duplicate; a different set of rows gets a different key."""
    ids = ",".join(str(i) for i in sorted(notification_ids))
    return hashlib.sha256(f"{channel_id}:{ids}".encode()).hexdigest()[:32]


def retry_delay(attempts: int, *, base_s: float, cap_s: float) -> float:
    """Seconds before the next attempt after `attempts` failed ones: base, 2 base, 4 base ... up to cap."""
    return min(cap_s, base_s * (2 ** max(0, attempts - 1)))
