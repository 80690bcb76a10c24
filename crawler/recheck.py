"""Has a page changed since we stored it? The comparison behind the active and inactive scans (seed 001).

Pure: the scan services feed each HTTP reply to a `Recheck` and send whatever request it asks for next,
so the order of the probes is decided here, once, and tested without a network:

1. HEAD, and compare Last-Modified, ETag and Content-Length with the stored values. Any one that
   differs means changed; all those present on both sides equal means unchanged.
2. When HEAD is refused (405, 501) or its answer carries none of the stored validators: a GET,
   conditional (If-None-Match / If-Modified-Since) when we hold validators. 304 means unchanged.
3. A full answer to that GET is compared by body checksum (the same sha1 the load agent stores).

A URL that was never loaded (it failed at its first load) has nothing to compare: any valid answer
means "load it". Redirects compare their target instead of a body.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

from .lifecycle import Agent, Event, event_for_fetch
from .urlnorm import UrlError, canonicalize

HEAD_REFUSED = frozenset({405, 501})
MAX_REQUESTS = 2  # a HEAD, then at most one GET


class Outcome(enum.StrEnum):
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    NO_RESPONSE = "no_response"
    GONE = "gone"
    BACK_OFF = "back_off"  # 429, or 503 with Retry-After: ask the server later (the URL: a failure)


@dataclass(frozen=True)
class Known:
    """What we stored about the URL when it was last loaded."""

    url: str
    etag: str = ""
    last_modified: str = ""
    content_length: int | None = None
    checksum: str = ""
    redirect_to: str = ""
    loaded: bool = True  # False: it never had a page (failed at its first load); any answer means reload


@dataclass(frozen=True)
class Request:
    method: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    status: int | None  # None: no HTTP response at all
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes | None = None  # a GET's body; None for HEAD


@dataclass(frozen=True)
class Finding:
    outcome: Outcome
    reason: str  # short, for the UrlEvent: what decided it


def body_checksum(body: bytes) -> str:
    """The load agent's checksum: sha1 of the body, empty for an empty body."""
    return hashlib.sha1(body).hexdigest() if body else ""


def _etag(value: str) -> str:
    # Weak comparison (RFC 9110 8.8.3.2): W/"x" and "x" name the same version for our purpose.
    return value.strip().removeprefix("W/")


def _same_date(a: str, b: str) -> bool:
    try:
        return parsedate_to_datetime(a) == parsedate_to_datetime(b)
    except (TypeError, ValueError, IndexError):
        return a.strip() == b.strip()


def _length(value: str | None) -> int | None:
    try:
        return int(value.split(",")[0].strip()) if value else None
    except ValueError:
        return None


def compare_validators(known: Known, headers: Mapping[str, str]) -> Finding | None:
    """CHANGED or UNCHANGED by the validators both sides have; None when there is nothing to compare."""
    compared: list[str] = []
    etag = headers.get("etag", "")
    if known.etag and etag:
        if _etag(known.etag) != _etag(etag):
            return Finding(Outcome.CHANGED, "etag differs")
        compared.append("etag")
    modified = headers.get("last-modified", "")
    if known.last_modified and modified:
        if not _same_date(known.last_modified, modified):
            return Finding(Outcome.CHANGED, "last-modified differs")
        compared.append("last-modified")
    length = _length(headers.get("content-length"))
    if known.content_length is not None and length is not None:
        if known.content_length != length:
            return Finding(Outcome.CHANGED, "content-length differs")
        compared.append("content-length")
    if not compared:
        return None
    return Finding(Outcome.UNCHANGED, "same " + ", ".join(compared))


def conditional_headers(known: Known) -> dict[str, str]:
    headers = {}
    if known.etag:
        headers["If-None-Match"] = known.etag
    if known.last_modified:
        headers["If-Modified-Since"] = known.last_modified
    return headers


def _redirect_target(known: Known, reply: Reply) -> str | None:
    """The canonical Location of a redirect reply; None when it is not one (304 is not a redirect)."""
    location = reply.headers.get("location")
    if reply.status is None or not (300 <= reply.status < 400) or reply.status == 304 or not location:
        return None
    try:
        return canonicalize(location, base=known.url)
    except UrlError:
        return location


class Recheck:
    """One URL's re-check. `request` is the next request to send; `feed` its reply, which gives either
    the next request (and sets `request`) or the Finding. At most two requests: HEAD, then GET."""

    def __init__(self, known: Known):
        self.known = known
        self.request = Request("HEAD")

    def feed(self, reply: Reply) -> Request | Finding:
        if self.request.method == "HEAD" and reply.status in HEAD_REFUSED:
            return self._then_get()
        event = event_for_fetch(reply.status, has_retry_after="retry-after" in reply.headers)
        if event is None:
            return Finding(Outcome.BACK_OFF, f"HTTP {reply.status}")
        if event == Event.GONE:
            return Finding(Outcome.GONE, "HTTP 410")
        if event == Event.NO_RESPONSE:
            return Finding(Outcome.NO_RESPONSE, f"HTTP {reply.status}" if reply.status else "no response")
        return self._compare(reply)

    def _then_get(self) -> Request:
        self.request = Request("GET", conditional_headers(self.known))
        return self.request

    def _compare(self, reply: Reply) -> Request | Finding:
        known = self.known
        if not known.loaded:
            return Finding(Outcome.CHANGED, "never loaded")
        if reply.status == 304:
            return Finding(Outcome.UNCHANGED, "304 not modified")
        target = _redirect_target(known, reply)
        if target is not None or known.redirect_to:
            return _compare_redirect(known.redirect_to, target)
        if self.request.method == "HEAD":
            return compare_validators(known, reply.headers) or self._then_get()
        # The load agent stored the checksum of every page it kept (empty for an empty body), so a
        # full answer can always be compared, with or without validators.
        same = body_checksum(reply.body or b"") == known.checksum
        return Finding(Outcome.UNCHANGED if same else Outcome.CHANGED, f"checksum {'same' if same else 'differs'}")


def _compare_redirect(stored: str, now: str | None) -> Finding:
    if stored and now:
        same = stored == now
        return Finding(
            Outcome.UNCHANGED if same else Outcome.CHANGED, f"redirect target {'same' if same else 'differs'}"
        )
    return Finding(Outcome.CHANGED, "now redirects" if now else "no longer redirects")


# What a finding means for the life-cycle, per agent: the inactive scan's "responds" is the active
# scan's "unchanged".
_EVENTS: dict[Agent, dict[Outcome, Event]] = {
    Agent.ACTIVE_SCAN: {
        Outcome.CHANGED: Event.CHANGED,
        Outcome.UNCHANGED: Event.UNCHANGED,
        Outcome.NO_RESPONSE: Event.NO_RESPONSE,
        Outcome.GONE: Event.GONE,
    },
    Agent.INACTIVE_SCAN: {
        Outcome.CHANGED: Event.RESPONDS_RELOAD,
        Outcome.UNCHANGED: Event.RESPONDS,
        Outcome.NO_RESPONSE: Event.NO_RESPONSE,
        Outcome.GONE: Event.GONE,
    },
}


def event_for_recheck(agent: Agent, outcome: Outcome) -> Event | None:
    """The life-cycle event of a re-check by `agent`; None for BACK_OFF (the server backs off: the agent
    counts the URL a failure itself)."""
    return _EVENTS[agent].get(outcome)
