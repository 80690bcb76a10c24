"""Resolving a URL's host before dialling it, as both HTTP stacks do: bounded by ``dns_timeout`` on the
process's resolver threads (``crawler.lookup``), every address through the private-address guard, only
the allowed ones returned, so the connection is pinned to what was checked.

The thread-per-exchange Fetcher resolves here, and so does the fetch engine's ``EngineFetcher``
(``resolve_checked``: the addresses to hand libcurl, or the failed result when nothing may be dialled);
``lookup_many`` asks many names at once for the address each would be dialled at.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from .fetch_failures import _Failure
from .fetch_outcome import _Outcome
from .http import DEFAULT_PORTS, FailureKind, FetchResult, unsupported_url
from .lookup import lookup_submit

__all__ = ["lookup_many", "resolve_checked"]


def lookup_many(
    names: Sequence[tuple[str, int]], *, timeout: float, check: Callable[[str], str | None] | None = None
) -> dict[tuple[str, int], str | None]:
    """Each (host, port) -> the address the fetcher would dial first (the first one `check` allows, in resolver
    order), or None when the name does not resolve, resolves only to forbidden addresses, or has not answered
    within `timeout` seconds of the call (all names are asked at once, on the fetcher's resolver threads, so
    a hung resolver costs `timeout` once, not once per name)."""
    futures = {
        (host, port): lookup_submit(host.strip("[]"), port, timeout=timeout) for host, port in dict.fromkeys(names)
    }
    deadline = time.monotonic() + timeout
    out: dict[tuple[str, int], str | None] = {}
    for key, future in futures.items():
        try:
            infos = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except (concurrent.futures.TimeoutError, OSError, UnicodeError):
            # A lookup still running is left to finish on its own, as in a fetch; one still queued never runs.
            future.cancel()
            out[key] = None
            continue
        addresses = dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos)
        out[key] = next((ip for ip in addresses if check is None or check(ip) is None), None)
    return out


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
    url: str, *, method: str, check: Callable[[str], str | None] | None, dns_timeout: float
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
    """Resolve once, time it, and filter through address_check; the connection is pinned to the result.

    getaddrinfo has no timeout parameter, and a resolver that never answers would hold the worker for
    as long as the system's resolver settings say (minutes with retries). So the lookup runs on a
    small shared pool of resolver threads and is waited for at most `dns_timeout`; a lookup still
    running then is left to finish on its own and the fetch fails as DNS. An IP literal needs no
    resolver: it is its own address.
    """
    started = time.monotonic()
    try:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            future = lookup_submit(host, port, timeout=dns_timeout)
            try:
                infos = future.result(timeout=dns_timeout)
            except concurrent.futures.TimeoutError:
                future.cancel()  # still queued: it never runs (crawler.lookup)
                raise
            addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
        else:
            addresses = (str(literal),)
    except concurrent.futures.TimeoutError as exc:
        detail = f"cannot resolve {host}: no answer within {dns_timeout:g}s"
        raise _Failure(FailureKind.DNS, detail) from exc
    except (socket.gaierror, UnicodeError) as exc:
        raise _Failure(FailureKind.DNS, f"cannot resolve {host}: {exc}") from exc
    finally:
        outcome.dns_ms = (time.monotonic() - started) * 1000
    if not addresses:
        raise _Failure(FailureKind.DNS, f"no addresses for {host}")
    if check is None:
        return addresses
    reasons = {ip: check(ip) for ip in addresses}
    # Only addresses that pass are ever dialled, so a host with a mix of good and forbidden
    # addresses is fetched from a good one; it is refused only when none is allowed.
    allowed = tuple(ip for ip in addresses if reasons[ip] is None)
    if not allowed:
        # Not the address nor its kind: the detail is shown to readers, and would tell what an internal name
        # resolves to to anyone who may make the crawl or the monitor look a name up (a job seed, a URL).
        refused = f"{host}: not an address the crawl may reach (CRAWL_ALLOW_PRIVATE)"
        raise _Failure(FailureKind.FORBIDDEN_ADDRESS, refused)
    return allowed
