"""Name lookups with their own deadline (CRAWL_DNS_TIMEOUT), for a loop that must not block: crawler.multicheck.

getaddrinfo has no timeout, and a resolver that never answers is retried for as long as resolv.conf says
(attempts x timeout x servers: easily a minute). libcurl's threaded resolver is bounded only by the connect
timeout (CURLOPT_CONNECTTIMEOUT covers "the name resolve (DNS) and all protocol handshakes"), and it reports
the expiry as a connect timeout. So the monitor's client looks names up itself, on a small pool of threads,
waits at most `timeout` for each, and hands libcurl the addresses found (CURLOPT_RESOLVE): libcurl then dials
exactly those, through the same per-address check as before. A lookup still running at its deadline is left
to finish on its own (a thread cannot be cancelled) and its answer is dropped; while the pool's threads are
all stuck, new lookups wait in its queue, and their deadline runs from the moment they were asked for.

No Django or Celery import.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import os
import socket
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["Lookup", "Lookups", "lookup_name", "resolve_entry", "resolver_pool"]

# What a lookup calls. Tests replace it (a resolver that hangs): there is no internet, and the system's
# resolver cannot be pointed elsewhere without root.
getaddrinfo = socket.getaddrinfo

_THREADS = 16  # lookups at once per process; a hung resolver holds a thread until getaddrinfo gives up


@dataclass(frozen=True)
class Lookup:
    """What one name lookup came to. `addresses` empty: it failed, `detail` says why."""

    host: str
    port: int
    addresses: tuple[str, ...]
    detail: str
    ms: float  # from the request for it to its answer (or to its deadline)
    started: float  # time.monotonic()
    started_wall: float  # time.time()


def lookup_name(url: str) -> tuple[str, int] | None:
    """(host, port) of a URL whose host is a name to look up; None for an IP literal, or a URL the HTTP
    client itself should refuse (no host, a bad port, a non-ASCII name)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host or not host.isascii() or parts.scheme.lower() not in ("http", "https"):
        return None
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    return host, port or (443 if parts.scheme.lower() == "https" else 80)


def resolve_entry(found: Lookup) -> str:
    """The CURLOPT_RESOLVE line that pins `found.host:port` to the addresses found."""
    addresses = ",".join(f"[{a}]" if ":" in a else a for a in found.addresses)
    return f"{found.host}:{found.port}:{addresses}"


def _resolve(host: str, port: int) -> tuple[str, ...]:
    infos = getaddrinfo(host, port, type=socket.SOCK_STREAM)
    # An IPv6 zone ("fe80::1%eth0") is dropped: CURLOPT_RESOLVE takes plain addresses (and such an address is
    # link-local, which the private-address check refuses anyway).
    ips = (str(info[4][0]).split("%", 1)[0] for info in infos if info[0] in (socket.AF_INET, socket.AF_INET6))
    return tuple(dict.fromkeys(ips))


class Lookups:
    """The lookups in flight of one check loop, by key. Not thread-safe: the loop's thread only."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._pending: dict[Hashable, tuple[concurrent.futures.Future, str, int, float, float]] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def start(self, key: Hashable, host: str, port: int) -> None:
        future = resolver_pool().submit(_resolve, host, port)
        self._pending[key] = (future, host, port, time.monotonic(), time.time())

    def ended(self) -> list[tuple[Hashable, Lookup]]:
        """The lookups that answered, failed or ran past their deadline since the last call."""
        now = time.monotonic()
        out = []
        for key, (future, host, port, started, wall) in list(self._pending.items()):
            if future.done():
                ms = (now - started) * 1000
                try:
                    addresses = future.result()
                    detail = "" if addresses else f"no addresses for {host}"
                except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
                    addresses, detail = (), f"cannot resolve {host}: {exc}"
            elif now - started >= self.timeout:
                ms, addresses = self.timeout * 1000, ()
                detail = f"cannot resolve {host}: no answer within {self.timeout:g}s"
            else:
                continue
            del self._pending[key]
            out.append((key, Lookup(host, port, addresses, detail[:300], ms, started, wall)))
        return out

    def next_deadline(self) -> float | None:
        return min((started + self.timeout for _, _, _, started, _ in self._pending.values()), default=None)

    def wait(self, seconds: float) -> None:
        """Until one lookup ends or `seconds` pass (for a loop with nothing else to wait on)."""
        if self._pending and seconds > 0:
            futures = [entry[0] for entry in self._pending.values()]
            concurrent.futures.wait(futures, timeout=seconds, return_when=concurrent.futures.FIRST_COMPLETED)


_executor: concurrent.futures.ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def resolver_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's resolver threads, created on first use: the monitor's lookups here and the crawler's
    (crawler.fetch) share them."""
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = concurrent.futures.ThreadPoolExecutor(_THREADS, thread_name_prefix="resolve")
    return _executor


def _forget_pool() -> None:
    """A forked child (a prefork worker) has none of its parent's threads: it starts its own pool."""
    global _executor
    _executor = None


os.register_at_fork(after_in_child=_forget_pool)
