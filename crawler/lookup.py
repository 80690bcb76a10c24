"""Name lookups with their own deadline (CRAWL_DNS_TIMEOUT), for a loop that must not block: crawler.multicheck.

getaddrinfo has no timeout, and a resolver that never answers is retried for as long as resolv.conf says
(attempts x timeout x servers: easily a minute). libcurl's threaded resolver is bounded only by the connect
timeout (CURLOPT_CONNECTTIMEOUT covers "the name resolve (DNS) and all protocol handshakes"), and it reports
the expiry as a connect timeout. So the monitor's client looks names up itself, on a small pool of threads,
waits at most `timeout` for each, and hands libcurl the addresses found (CURLOPT_RESOLVE): libcurl then dials
exactly those, through the same per-address check as before. A lookup still running at its deadline is left
to finish on its own (a thread cannot be cancelled) and its answer is dropped; one still queued then is
cancelled, so it never takes a thread from the lookups asked for after it.

The pool (ResolverPool) is shared by the whole process, so no single page can be let to hold it: the names
of one domain (its last two labels, three under a short second level such as co.uk) get at most PER_GROUP
of its threads at once, and the rest of them wait apart, not in the line every other name waits in. Each
lookup has a deadline (its caller's timeout, STUCK_AFTER by default): a thread still in a lookup past
LATE_AFTER (or that deadline, if sooner) no longer counts against MAX_THREADS and is replaced by a new one (up
to HARD_MAX_THREADS in all); and a domain with a lookup past its deadline is slow from then on, one lookup
at a time, until one of its lookups ends within its deadline. Hanging names spread over many domains thus
hold at most PER_GROUP threads a domain, once, and a host that resolves at once is still looked up at once.

No Django or Celery import.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["Lookup", "Lookups", "ResolverPool", "lookup_name", "name_group", "resolve_entry", "resolver_pool"]


def getaddrinfo(*args, **kwargs):
    """What a lookup calls: socket.getaddrinfo, looked up at each call. Tests replace either (a resolver that
    hangs): there is no internet, and the system's resolver cannot be pointed elsewhere without root."""
    return socket.getaddrinfo(*args, **kwargs)


_THREADS = 16  # idle threads kept for lookups; a hung resolver holds a thread until getaddrinfo gives up
MAX_THREADS = 64  # threads at most, stuck ones not counted
HARD_MAX_THREADS = 512  # threads at most, stuck ones included
PER_GROUP = 4  # lookups of one domain at once
STUCK_AFTER = 5.0  # seconds: a lookup's deadline when its caller gives none (CRAWL_DNS_TIMEOUT's default)
WATCH_EVERY = 0.1  # seconds between two looks for late lookups while jobs wait for a thread
LATE_AFTER = 1.0  # seconds: a lookup still running is late, and its thread is replaced (a resolver answers in ms)
IDLE_EXIT = 30.0  # seconds an extra thread (past _THREADS) waits for work before it ends


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


def name_group(host: str) -> str:
    """The domain a name's lookups are counted under (ResolverPool's PER_GROUP): its last two labels, or three
    when the second-level one is short (example.co.uk, a.ac.kr)."""
    labels = host.lower().rstrip(".").split(".")
    take = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and len(labels[-2]) <= 3 else 2
    return ".".join(labels[-take:])


def lookup_infos(host: str, port: int) -> list:
    """getaddrinfo for a TCP connection to host:port (through the module's `getaddrinfo`, which tests replace)."""
    return getaddrinfo(host, port, type=socket.SOCK_STREAM)


def lookup_submit(host: str, port: int, *, timeout: float = STUCK_AFTER) -> concurrent.futures.Future:
    """lookup_infos(host, port) on the process's resolver pool, counted under the name's domain, with the
    deadline `timeout`. The caller waits for it as long as it wants, then cancel()s it (a lookup still queued
    then never runs)."""
    return resolver_pool().submit_for(name_group(host), lookup_infos, host, port, deadline_s=timeout)


def _resolve(host: str, port: int) -> tuple[str, ...]:
    infos = lookup_infos(host, port)
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
        future = resolver_pool().submit_for(name_group(host), _resolve, host, port, deadline_s=self.timeout)
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
                future.cancel()  # still queued: it never runs
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


@dataclass(eq=False)
class _Job:
    future: concurrent.futures.Future
    fn: Callable
    args: tuple
    kwargs: dict
    group: str | None
    deadline_s: float = STUCK_AFTER
    started: float = 0.0  # time.monotonic() when a thread took it

    def stuck(self, now: float) -> bool:
        """Past its deadline: its group is slow."""
        return now - self.started > self.deadline_s

    def late(self, now: float) -> bool:
        """Past LATE_AFTER (or its deadline, if sooner): its thread no longer counts against max_threads."""
        return now - self.started > min(self.deadline_s, LATE_AFTER)


@dataclass
class ResolverPool:
    """Threads for blocking name lookups, which one page's names cannot take all of (the module's docstring).

    `submit_for(group, fn, …, deadline_s=…)` runs `fn` on a thread once fewer than `per_group` of the group's
    run (one, while the group is slow), in the order asked; a future cancelled meanwhile is skipped. A thread
    is started whenever a job is ready and no thread is idle, up to `max_threads` not late (`_Job.late`) and
    `hard_max_threads` in all. Threads past `threads` end after
    IDLE_EXIT seconds without work."""

    threads: int = _THREADS
    per_group: int = PER_GROUP
    max_threads: int = MAX_THREADS
    hard_max_threads: int = HARD_MAX_THREADS
    _cv: threading.Condition = field(default_factory=threading.Condition)
    _ready: deque = field(default_factory=deque)
    _held: dict = field(default_factory=dict)  # group -> deque of jobs waiting for one of the group's places
    _running: dict = field(default_factory=dict)  # group -> jobs of it ready or running
    _active: set = field(default_factory=set)  # the jobs threads are running
    _slow: set = field(default_factory=set)  # groups with a lookup that ran past its deadline
    _alive: int = 0
    _idle: int = 0
    _watching: bool = False  # a _watch thread runs

    def submit(self, fn: Callable, /, *args, **kwargs) -> concurrent.futures.Future:
        return self.submit_for(None, fn, *args, **kwargs)

    def submit_for(
        self, group: str | None, fn: Callable, /, *args, deadline_s: float = STUCK_AFTER, **kwargs
    ) -> concurrent.futures.Future:
        job = _Job(concurrent.futures.Future(), fn, args, kwargs, group, deadline_s)
        with self._cv:
            self._mark_slow(time.monotonic())
            if group is not None and self._running.get(group, 0) >= self._limit(group):
                held = self._held.setdefault(group, deque())
                if len(held) >= 64:  # lookups given up on while the group's places are stuck: forgotten
                    held = self._held[group] = deque(j for j in held if not j.future.cancelled())
                held.append(job)
            else:
                self._make_ready(job)
        return job.future

    def _limit(self, group: str) -> int:
        return 1 if group in self._slow else self.per_group

    def _mark_slow(self, now: float) -> int:
        """With the lock held: the groups of the jobs running past their deadline marked slow; how many jobs
        are late (their threads not counted against max_threads)."""
        late = 0
        for job in self._active:
            if job.late(now):
                late += 1
                if job.group is not None and job.stuck(now):
                    self._slow.add(job.group)
        return late

    def _make_ready(self, job: _Job) -> None:
        """With the lock held: `job` takes one of its group's places and waits for a thread."""
        if job.group is not None:
            self._running[job.group] = self._running.get(job.group, 0) + 1
        self._ready.append(job)
        self._staff()

    def _staff(self) -> None:
        """With the lock held: a thread for the jobs ready, if one may be started; else one is woken, and
        while no thread may be started, a watcher looks again as the running lookups grow late."""
        if self._staffed():
            return
        if not self._watching:
            self._watching = True
            threading.Thread(target=self._watch, name="resolve-watch", daemon=True).start()

    def _staffed(self) -> bool:
        """With the lock held: a thread for each job ready that no idle thread will take, as far as the limits
        allow; False when jobs still wait then."""
        late = self._mark_slow(time.monotonic())
        self._cv.notify(len(self._ready))
        started = 0
        while self._idle + started < len(self._ready):
            if self._alive >= self.hard_max_threads or self._alive - late >= self.max_threads:
                return False
            self._alive += 1
            started += 1
            threading.Thread(target=self._work, name=f"resolve-{self._alive}", daemon=True).start()
        return True

    def _watch(self) -> None:
        """Every WATCH_EVERY while jobs wait for a thread: start one when a running lookup has grown late."""
        while True:
            time.sleep(WATCH_EVERY)
            with self._cv:
                if not self._ready or self._staffed():
                    self._watching = False
                    return

    def _release(self, job: _Job) -> None:
        """With the lock held: `job` ended (or was skipped); the next one held for its group gets its place."""
        group = job.group
        self._active.discard(job)
        if group is None:
            return
        if job.started:
            if job.stuck(time.monotonic()):
                self._slow.add(group)
            else:
                self._slow.discard(group)  # it answers again within its deadline
        self._running[group] -= 1
        held = self._held.get(group)
        while held and self._running[group] < self._limit(group):
            waiting = held.popleft()
            if not waiting.future.cancelled():
                self._make_ready(waiting)
        if held is not None and not held:
            del self._held[group]
        if not self._running[group]:
            del self._running[group]

    def _next(self) -> _Job | None:
        with self._cv:
            while not self._ready:
                self._idle += 1
                woke = self._cv.wait(None if self._alive <= self.threads else IDLE_EXIT)
                self._idle -= 1
                if not woke and not self._ready:
                    self._alive -= 1
                    return None
            job = self._ready.popleft()
            job.started = time.monotonic()
            self._active.add(job)
            return job

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            if job.future.set_running_or_notify_cancel():
                try:
                    job.future.set_result(job.fn(*job.args, **job.kwargs))
                except BaseException as exc:  # noqa: BLE001 - handed to the caller, as an executor does
                    job.future.set_exception(exc)
            else:
                job.started = 0.0  # skipped: says nothing of its group
            with self._cv:
                self._release(job)

    def backlog(self) -> int:
        """Jobs not running yet (ready or held) that someone still waits for."""
        with self._cv:
            waiting = [*self._ready, *(job for held in self._held.values() for job in held)]
            return sum(not job.future.cancelled() for job in waiting)


_executor: ResolverPool | None = None
_executor_lock = threading.Lock()


def resolver_pool() -> ResolverPool:
    """The process's resolver threads, created on first use: the monitor's lookups here and the crawler's
    (crawler.resolve) share them."""
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = ResolverPool()
    return _executor


def _forget_pool() -> None:
    """A forked child (a prefork worker) has none of its parent's threads: it starts its own pool."""
    global _executor
    _executor = None


os.register_at_fork(after_in_child=_forget_pool)
