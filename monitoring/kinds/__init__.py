"""Monitor kinds besides HTTP: a TCP connect (tcp.py), a DNS lookup (dns.py) and a heartbeat that a job
pings (heartbeat.py). Each is one small module with the same contract: given its spec, return a
``KindResult`` (never raise for a network reason), whose category is one of the four of crawler.status, so
every kind goes through the same confirmation, rollups, timeline, alerts and status pages as HTTP.

No Django or Celery import: monitoring.services.checks builds the specs from the monitor's row and
records the results; monitoring.services.kinds runs them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from crawler.http import FailureKind, FetchResult, Timings
from crawler.status import Category


class Kind(enum.StrEnum):
    """What a monitor checks. Stored on the monitor; the strings never change."""

    HTTP = "http"
    TCP = "tcp"
    DNS = "dns"
    HEARTBEAT = "heartbeat"


# The scheme of the Server row a non-HTTP monitor hangs on (the unit every monitoring table is keyed by).
SCHEMES = {Kind.TCP: "tcp", Kind.DNS: "dns", Kind.HEARTBEAT: "heartbeat"}


def target_text(*, scheme: str, host: str, port: int, origin: str) -> str:
    """What a monitor watches, as people write it: ``db.example.org:5432`` for TCP, the name for DNS, the
    origin for a web server. A heartbeat watches no address (its name says which job)."""
    if scheme == SCHEMES[Kind.TCP]:
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if scheme in (SCHEMES[Kind.DNS], SCHEMES[Kind.HEARTBEAT]):
        return host
    return origin


def shown_name(*, name: str, scheme: str, host: str, port: int, origin: str) -> str:
    """The one name a monitor goes by on every page, alert, status page and report: the name people gave
    it, else its target as they write it."""
    return name or target_text(scheme=scheme, host=host, port=port, origin=origin)


def kind_of_scheme(scheme: str) -> Kind:
    return next((k for k, s in SCHEMES.items() if s == scheme), Kind.HTTP)


CRAWLED_SCHEMES = ("http", "https")  # the crawler visits only web servers; other kinds' rows are monitors only


@dataclass(frozen=True)
class KindResult:
    """One check of a non-HTTP monitor. `failure` is the kind's own failure name ("" when it passed),
    stored as the check's failure kind; `detail` says what happened in words."""

    started_at: float  # time.time() when the check began
    result: FetchResult
    category: Category
    failure: str = ""
    detail: str = ""


def result_of(
    target: str,
    method: str,
    *,
    timings: Timings,
    detail: str = "",
    failure: FailureKind | None = None,
    received: int = 0,
    peer_ip: str | None = None,
) -> FetchResult:
    """The FetchResult standing for a non-HTTP check: no status, no body, its timings."""
    return FetchResult(
        url=target,
        method=method,
        status=None,
        headers={},
        body=b"",
        failure=failure,
        detail=detail[:300],
        truncated=False,
        bytes_received=received,
        timings=timings,
        peer_ip=peer_ip,
    )


def timed_category(total_ms: float, threshold_s: float) -> Category:
    """A check that passed: normal, or delay when it took longer than the delay threshold."""
    return Category.DELAY if total_ms / 1000.0 > threshold_s else Category.NORMAL
