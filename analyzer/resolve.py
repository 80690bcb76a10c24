"""Name resolution for Find_Active_Domain (pure; no Django). The analyzer asks a `Resolver` (any callable
from a host name to its addresses), so tests pass a dictionary's lookup and never touch the network."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, TimeoutError, as_completed

__all__ = ["resolve_many", "system_resolver"]

Resolver = Callable[[str], Sequence[str]]


def system_resolver(name: str) -> list[str]:
    """The addresses of `name` from the system resolver, or of www.<name> when the bare name has none
    (many domains publish an address only for their web host). Empty when neither resolves."""
    for host in (name, f"www.{name}"):
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            continue
        addresses = sorted({info[4][0] for info in infos})
        if addresses:
            return addresses
    return []


def resolve_many(
    resolver: Resolver, names: Iterable[str], *, concurrency: int = 16, timeout: float = 60.0
) -> dict[str, list[str]]:
    """Resolve names on `concurrency` threads (a lookup mostly waits on the network). A name whose
    lookup fails, or is still running when `timeout` seconds are up, gets no addresses: the system
    resolver cannot be interrupted, so a slow name is abandoned rather than waited for."""
    names = list(dict.fromkeys(names))
    out: dict[str, list[str]] = {name: [] for name in names}
    if not names:
        return out
    pool = ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(names))), thread_name_prefix="resolve")
    try:
        futures = {pool.submit(resolver, name): name for name in names}
        try:
            for future in as_completed(futures, timeout=timeout):
                try:
                    out[futures[future]] = list(future.result())
                except Exception:  # noqa: BLE001 - a failing lookup means "no address", not a failed run
                    continue
        except TimeoutError:
            pass
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return out
