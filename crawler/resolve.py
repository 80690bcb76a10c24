"""Resolving a name before dialling it: ``resolve_allowed`` is the one way every client does it (the crawl's
two HTTP stacks, the monitor's TCP kind, the RDAP client, alert destinations, the server dedup). The lookup runs
on the process's resolver threads (``crawler.lookup``) and is waited for at most its deadline; every address
goes through the private-address guard and only the allowed ones are returned, so a connection is pinned to
what was checked. An IP literal needs no resolver: it is its own address.

The engine's ``EngineFetcher`` asks ``resolve_checked`` (the addresses to hand libcurl, or the failed result
when nothing may be dialled); ``lookup_many`` asks many names at once for the address each would be dialled at.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import time
from collections.abc import Sequence
from urllib.parse import urlsplit

from .fetch_failures import _Failure
from .fetch_outcome import _Outcome
from .http import DEFAULT_PORTS, AddressCheck, FailureKind, FetchResult, unsupported_url
from .lookup import lookup_submit

__all__ = ["Unresolved", "lookup_many", "resolve_allowed", "resolve_allowed_each", "resolve_checked"]


def lookup_many(
    names: Sequence[tuple[str, int]], *, timeout: float, check: AddressCheck | None = None
) -> dict[tuple[str, int], str | None]:
    """Each (host, port) -> the address the fetcher would dial first (the first one `check` allows, in resolver
    order), or None when the name does not resolve, resolves only to forbidden addresses, or has not answered
    within `timeout` seconds of the call (resolve_allowed_each: all names asked at once)."""
    found = resolve_allowed_each(names, guard=check, deadline=timeout)
    return {key: None if isinstance(v, Unresolved) else v[0] for key, v in found.items()}


def _origin(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # e.g. a non-numeric or out-of-range port
        raise _Failure(FailureKind.OTHER, f"invalid URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise _Failure(*unsupported_url(url))
    return scheme, parts.hostname, port or DEFAULT_PORTS[scheme]


def resolve_checked(
    url: str, *, method: str, check: AddressCheck | None, dns_timeout: float
) -> tuple[tuple[str, ...], float] | FetchResult:
    """The addresses of `url`'s host that `check` allows (all of them when it is None) and the lookup's
    milliseconds, resolved as the Fetcher resolves (bounded by `dns_timeout`); or the failed fetch
    (DNS, FORBIDDEN_ADDRESS, an unsupported URL) when there is nothing to dial. For callers that dial
    themselves (crawler.engine)."""
    outcome = _Outcome(url=url, method=method.upper(), started=time.monotonic())
    try:
        _scheme, host, port = _origin(url)
        addresses = _resolve_into(outcome, host, port, check, dns_timeout)
    except _Failure as failure:
        return outcome.result(failure.kind, failure.detail)
    return addresses, outcome.dns_ms or 0.0


def _resolve_into(outcome: _Outcome, host: str, port: int, check, dns_timeout: float) -> tuple[str, ...]:
    """resolve_allowed, timed on the outcome; what it refuses is the fetch's failure."""
    started = time.monotonic()
    try:
        return resolve_allowed(host, port, guard=check, deadline=dns_timeout)
    except Unresolved as exc:
        raise _Failure(exc.kind, exc.detail) from exc
    finally:
        outcome.dns_ms = (time.monotonic() - started) * 1000


class Unresolved(OSError):
    """Nothing to dial: the name did not resolve in time (kind DNS) or only to addresses the guard refuses
    (FORBIDDEN_ADDRESS). `detail` is the sentence readers see; it never tells a refused address."""

    def __init__(self, kind: FailureKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def resolve_allowed(host: str, port: int, *, guard: AddressCheck | None, deadline: float) -> tuple[str, ...]:
    """`host`'s addresses that `guard` allows (every one when it is None), in resolver order, looked up on the
    resolver pool within `deadline` seconds. Raises Unresolved when there is nothing to dial."""
    found = resolve_allowed_each([(host, port)], guard=guard, deadline=deadline)[(host, port)]
    if isinstance(found, Unresolved):
        raise found
    return found


def resolve_allowed_each(
    names: Sequence[tuple[str, int]], *, guard: AddressCheck | None, deadline: float
) -> dict[tuple[str, int], tuple[str, ...] | Unresolved]:
    """resolve_allowed for many names at once: all are asked before any is waited for, and all share the one
    deadline, so a hung resolver costs `deadline` once, not once per name."""
    end = time.monotonic() + deadline
    asked = {(host, port): _ask(host.strip("[]"), port, deadline) for host, port in dict.fromkeys(names)}
    out: dict[tuple[str, int], tuple[str, ...] | Unresolved] = {}
    for (host, port), pending in asked.items():
        try:
            out[(host, port)] = _allowed(host, _answer(host, pending, end, deadline), guard)
        except Unresolved as exc:
            out[(host, port)] = exc
    return out


def _ask(host: str, port: int, deadline: float) -> tuple[str, ...] | concurrent.futures.Future:
    try:
        return (str(ipaddress.ip_address(host)),)
    except ValueError:
        return lookup_submit(host, port, timeout=deadline)


def _answer(host: str, pending, end: float, deadline: float) -> tuple[str, ...]:
    if isinstance(pending, tuple):
        return pending
    try:
        infos = pending.result(timeout=max(0.0, end - time.monotonic()))
    except concurrent.futures.TimeoutError:
        # A lookup still running is left to finish on its own; one still queued never runs (crawler.lookup).
        pending.cancel()
        raise Unresolved(FailureKind.DNS, f"cannot resolve {host}: no answer within {deadline:g}s") from None
    except (OSError, UnicodeError) as exc:
        raise Unresolved(FailureKind.DNS, f"cannot resolve {host}: {exc}") from None
    # An IPv6 zone ("fe80::1%eth0") is dropped: link-local, which the guard refuses unless it is allowed.
    return tuple(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos))


def _allowed(host: str, addresses: tuple[str, ...], guard: AddressCheck | None) -> tuple[str, ...]:
    if not addresses:
        raise Unresolved(FailureKind.DNS, f"no addresses for {host}")
    # Only addresses that pass are ever dialled, so a host with a mix of good and forbidden addresses is
    # reached at a good one; it is refused only when none is allowed.
    allowed = addresses if guard is None else tuple(ip for ip in addresses if guard(ip) is None)
    if not allowed:
        # Not the address nor its kind: the detail is shown to readers, and would tell what an internal name
        # resolves to to anyone who may make the crawl or the monitor look a name up (a job seed, a URL).
        raise Unresolved(
            FailureKind.FORBIDDEN_ADDRESS, f"{host}: not an address the crawl may reach (CRAWL_ALLOW_PRIVATE)"
        )
    return allowed
