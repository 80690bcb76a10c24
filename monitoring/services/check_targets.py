"""What a round checks and what it found: a monitor's effective settings read from its row (Target), and
the outcome of one check (Checked), which the fetching fills in and the writing stores. Kept apart from both
so each step reads the same two shapes; a row the admin's validation never saw still makes a Target, whose
`problem` fails that one check instead of its batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from crawler.http import FetchResult

from ..accepted_codes import AcceptedCodes
from ..assertions import Assertion, AssertionRuleError, assertions_parse
from ..content import ContentRule
from ..kinds import Kind
from ..models import ServerMonitor
from ..validate import monitor_problems
from .kinds import SPEC_FIELDS, Spec, spec_of
from .trust import url_trusted


@dataclass(frozen=True)
class Target:
    """One server to check, with its effective settings (per-server value or the MONITOR_* default).

    `problem` is set when the monitor's stored settings are unusable (a row that reached the database
    past the admin's validation): such a target is not fetched, and its check fails with that reason.
    """

    server_id: int
    url: str
    trusted: bool
    interval_s: float
    threshold_s: float
    accepted: AcceptedCodes
    fail_after: int
    recover_after: int
    content: ContentRule = ContentRule()  # empty: no content check
    problem: str = ""
    kind: str = Kind.HTTP.value  # monitoring.kinds; any but http is checked by its `spec`
    spec: Spec | None = None
    assertions: tuple[Assertion, ...] = ()  # HTTP: what a valid answer must also satisfy (monitoring.assertions)


BAD_SETTINGS = "bad_settings"  # the failure kind of a check that a monitor's unusable settings failed


def target_of(monitor: ServerMonitor) -> Target:
    """The monitor's effective settings. Never raises: an unusable field falls back to its MONITOR_*
    default, and the target carries the problem, so one bad row fails its own check, not its batch."""
    server = monitor.server
    problems = monitor_problems(
        health_url=monitor.health_url,
        interval_s=monitor.interval_s,
        delay_threshold_s=monitor.delay_threshold_s,
        accepted_codes=monitor.accepted_codes,
        fail_after=monitor.fail_after,
        recover_after=monitor.recover_after,
    )

    def usable(name: str, value, default):
        return default if name in problems or not value else value

    threshold = monitor.delay_threshold_s
    url = usable("health_url", monitor.health_url, f"{server.origin}/")
    trusted = url_trusted(url, server)  # the server's trust covers its own host only
    spec, kind_problem = spec_of(monitor)
    if kind_problem:
        problems["kind"] = kind_problem
    assertions = _assertions(monitor, trusted, problems)
    return Target(
        server_id=monitor.server_id,
        url=url,
        trusted=trusted,
        interval_s=usable("interval_s", monitor.interval_s, settings.MONITOR_INTERVAL),
        threshold_s=settings.MONITOR_DELAY_THRESHOLD
        if threshold is None or "delay_threshold_s" in problems
        else threshold,
        accepted=AcceptedCodes() if "accepted_codes" in problems else AcceptedCodes.parse(monitor.accepted_codes),
        fail_after=usable("fail_after", monitor.fail_after, settings.MONITOR_FAIL_AFTER),
        recover_after=usable("recover_after", monitor.recover_after, settings.MONITOR_RECOVER_AFTER),
        # A content check reads the body: on a URL nobody vouched for, its outcome would read a third party's page.
        content=ContentRule(
            monitor.content_must, monitor.content_must_not, monitor.content_regex, monitor.content_rendered
        )
        if trusted
        else ContentRule(),
        problem="; ".join(f"{name}: {message}" for name, message in problems.items()),
        kind=monitor.kind or Kind.HTTP.value,
        spec=spec,
        assertions=assertions,
    )


def _assertions(monitor: ServerMonitor, trusted: bool, problems: dict[str, str]) -> tuple[Assertion, ...]:
    """The monitor's response assertions; header and json ones only on a trusted URL, as content rules."""
    try:
        rules = assertions_parse(monitor.assertions)
    except AssertionRuleError as exc:
        problems["assertions"] = str(exc)
        return ()
    return rules if trusted else tuple(a for a in rules if not a.reads_response)


@dataclass
class Checked:
    """One check's outcome, as the caller reports it."""

    target: Target
    result: FetchResult
    checked_at: datetime
    category: str
    status: str = ""  # the confirmed status after this check ("maintenance" inside a window)
    changed_from: str | None = None
    check_id: int | None = None
    failure: str = ""  # set by the monitor's own verdict (content); else the fetch's failure kind
    detail: str = ""
    tries: int = 1  # requests this check took (MONITOR_RETRIES); the result is the last one's

    @property
    def server_id(self) -> int:
        return self.target.server_id


# What target_of reads; the rest (the server's robots.txt, the load profile...) stays in the database.
_TARGET_FIELDS = [
    *("health_url", "interval_s", "delay_threshold_s", "accepted_codes", "fail_after", "recover_after"),
    *("content_must", "content_must_not", "content_regex", "content_rendered", "assertions"),
    *("server__scheme", "server__host", "server__port", "server__trusted"),
    *SPEC_FIELDS,
]


def monitors_of(server_ids: Sequence[int]):
    qs = ServerMonitor.objects.filter(server_id__in=server_ids, enabled=True, server__enabled=True)
    return qs.select_related("server").only(*_TARGET_FIELDS)
