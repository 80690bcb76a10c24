"""Run a function in a forked child process with a hard stop: the way to bound work that a thread cannot
interrupt (a regular expression deep in C code, an HTTP client reading a trickling answer, a name lookup).

A thread that overruns its deadline can only be abandoned, and it goes on holding its socket, its memory and
whatever it was doing: a webhook it keeps posting, a CPU it keeps burning. A child process is killed. Each
child also arms its own timer (SIGALRM at its default action: the kernel ends the process, no Python code
runs), so it ends on time even when the parent that started it was killed first: a caller that leases work
for longer than the deadline knows that, once the lease is over, nothing it started can still be running.

``run_children`` starts every call at once and waits for all of them within one deadline, so a call that
hangs delays no other. ``run_each`` runs one function over many items, one after another in one child (a fork
per batch, not per item), each item within its own deadline: an item that overruns is killed with its child
and the items after it go on in a new one; while it waits, the parent is free to keep its claim on the work
alive (``on_beat``), however long one item takes.

The parent waits on its pipes through ``selectors`` (epoll on Linux), never ``select()``: a process that holds
more than 1,023 descriptors (a web server's idle connections) would otherwise fail every call.

A child gets a copy of the parent's memory (fork): the function and its arguments
are not pickled, only what it returns (which must be picklable). The pages stay shared until one side
writes to them, and the child's garbage collector would write to every object it scans: the parent's
objects are frozen for the child (``gc.freeze`` at the fork), so a child that parses one page copies the
pages it uses, not the whole worker. The child holds only the thread that
forked it; what it calls must not wait on a lock another thread of the parent held at that moment (a
child that does is killed at the deadline like any other).

Linux and other POSIX systems; without os.fork the calls run in the caller's thread, unbounded.
No Django or Celery import.
"""

from __future__ import annotations

import gc
import os
import pickle
import selectors
import signal
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ChildResult", "can_fork", "run_children", "run_each", "run_in_child"]

_SELF_STOP_AFTER_S = 0.5  # the child's own timer fires this long after the parent's deadline


@dataclass(frozen=True)
class ChildResult:
    """What one call came to. ``ok``: it returned ``value``. Otherwise ``error`` says why not: "timeout"
    (killed at the deadline), "memory" (it ran out of its memory allowance), or the exception's text."""

    ok: bool
    value: Any = None
    error: str = ""
    seconds: float = 0.0

    @property
    def timed_out(self) -> bool:
        return self.error == "timeout"


def can_fork() -> bool:
    return hasattr(os, "fork")


_fork_lock = threading.Lock()


def _fork() -> int:
    """os.fork, the parent's objects frozen in the child: its collector never scans (so never writes to) an
    object it got from the parent. The parent unfreezes them at once and collects as before. One fork at a
    time, so no thread unfreezes while another forks."""
    with _fork_lock:  # the child leaves the block too, releasing its own copy of the lock
        gc.freeze()
        pid = -1
        try:
            pid = os.fork()
        finally:
            if pid != 0:  # the parent, or no child at all
                gc.unfreeze()
    return pid


def _vm_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _child_setup(deadline_s: float, memory_bytes: int | None) -> None:
    """In the child: arm the self-stop and cap the memory."""
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
    signal.setitimer(signal.ITIMER_REAL, deadline_s + _SELF_STOP_AFTER_S)
    if memory_bytes is not None:
        import resource

        current = _vm_bytes()
        if current is not None:
            limit = current + memory_bytes
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _outcome_kind_bytes(fn: Callable[[], Any]) -> tuple[str, bytes]:
    """In the child: fn run, its outcome pickled, and the outcome's kind ("ok", "memory", "error")."""
    try:
        outcome: tuple = ("ok", fn())
    except MemoryError:
        outcome = ("memory", None)
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent as text
        outcome = ("error", f"{type(exc).__name__}: {exc}"[:2000])
    try:
        return outcome[0], pickle.dumps(outcome)
    except Exception as exc:  # noqa: BLE001
        return "error", pickle.dumps(("error", f"result not picklable: {exc}"[:500]))


def _outcome_bytes(fn: Callable[[], Any]) -> bytes:
    """In the child: fn run, its outcome pickled."""
    return _outcome_kind_bytes(fn)[1]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _child_main(fn: Callable[[], Any], write_fd: int, deadline_s: float, memory_bytes: int | None) -> None:
    """In the child: arm the self-stop, cap the memory, run, write the pickled outcome, exit at once (no
    atexit handlers, no finalizers: the parent's open connections and files are left untouched)."""
    code = 0
    try:
        _child_setup(deadline_s, memory_bytes)
        _write_all(write_fd, _outcome_bytes(fn))
    except BaseException:  # noqa: BLE001 - the parent sees "no result"
        code = 1
    finally:
        os._exit(code)


_FRAME = struct.Struct("!Q")  # the length of each item's pickled outcome, before it (run_each)


def _each_child_main(fn: Callable[[Any], Any], items: Sequence[Any], write_fd: int, deadline_s: float,
                     memory_bytes: int | None) -> None:  # fmt: skip
    """In the child of run_each: each item's outcome framed and written as soon as it is known; the self-stop
    re-armed for each item, so each has the whole deadline and none more."""
    code = 0
    try:
        _child_setup(deadline_s, memory_bytes)
        for item in items:
            signal.setitimer(signal.ITIMER_REAL, deadline_s + _SELF_STOP_AFTER_S)
            data = _outcome_bytes(lambda item=item: fn(item))
            _write_all(write_fd, _FRAME.pack(len(data)) + data)
    except BaseException:  # noqa: BLE001 - the parent sees the items without a result
        code = 1
    finally:
        os._exit(code)


def _outcome(data: bytes, status: int, seconds: float, killed: bool) -> ChildResult:
    if killed:
        return ChildResult(False, error="timeout", seconds=seconds)
    try:
        kind, value = pickle.loads(data)
    except Exception:  # noqa: BLE001 - no or partial result: the child died
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            why = "timeout" if sig == signal.SIGALRM else f"killed by signal {sig}"
            return ChildResult(False, error=why, seconds=seconds)
        return ChildResult(False, error="ended without a result", seconds=seconds)
    if kind == "ok":
        return ChildResult(True, value=value, seconds=seconds)
    return ChildResult(False, error="memory" if kind == "memory" else str(value), seconds=seconds)


def _inline(fn: Callable[[], Any]) -> ChildResult:
    started = time.monotonic()
    try:
        return ChildResult(True, value=fn(), seconds=time.monotonic() - started)
    except MemoryError:
        return ChildResult(False, error="memory", seconds=time.monotonic() - started)
    except Exception as exc:  # noqa: BLE001
        return ChildResult(False, error=f"{type(exc).__name__}: {exc}"[:2000], seconds=time.monotonic() - started)


def run_children(
    calls: Sequence[Callable[[], Any]], *, deadline_s: float, memory_bytes: int | None = None
) -> list[ChildResult]:
    """Run each call in its own child, all at once; each is killed if it has not ended ``deadline_s`` after
    it started. ``memory_bytes``: how much address space a child may add to its copy of the parent.
    Results in the order of ``calls``."""
    if not can_fork():
        return [_inline(fn) for fn in calls]
    started = time.monotonic()
    end = started + deadline_s
    running: dict[int, tuple[int, int]] = {}  # read fd -> (index, pid)
    chunks: dict[int, list[bytes]] = {}
    results: list[ChildResult | None] = [None] * len(calls)
    try:
        for index, fn in enumerate(calls):
            read_fd, write_fd = os.pipe()
            pid = _fork()
            if pid == 0:  # pragma: no cover - the child; it never returns
                os.close(read_fd)
                _child_main(fn, write_fd, deadline_s, memory_bytes)
            os.close(write_fd)
            running[read_fd] = (index, pid)
            chunks[index] = []
        with selectors.DefaultSelector() as waiting:
            for fd in running:
                waiting.register(fd, selectors.EVENT_READ)
            while running:
                left = end - time.monotonic()
                if left <= 0:
                    break
                for key, _ in waiting.select(left):
                    fd = key.fd
                    data = os.read(fd, 65536)
                    index, pid = running[fd]
                    if data:
                        chunks[index].append(data)
                        continue
                    # End of file: the child wrote its result (or died); collect it.
                    waiting.unregister(fd)
                    del running[fd]
                    os.close(fd)
                    _, status = os.waitpid(pid, 0)
                    results[index] = _outcome(b"".join(chunks[index]), status, time.monotonic() - started, False)
    finally:
        # Past the deadline (or on an exception here): whatever still runs is killed and reaped.
        for fd, (index, pid) in running.items():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            os.close(fd)
            results[index] = _outcome(b"", 0, time.monotonic() - started, True)
    return [r if r is not None else ChildResult(False, error="not run") for r in results]


def run_in_child(fn: Callable[[], Any], *, deadline_s: float, memory_bytes: int | None = None) -> ChildResult:
    return run_children([fn], deadline_s=deadline_s, memory_bytes=memory_bytes)[0]


def run_each(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    deadline_s: float,
    memory_bytes: int | None = None,
    beat_s: float | None = None,
    on_beat: Callable[[], None] | None = None,
) -> list[ChildResult]:
    """``fn(item)`` for each item, one after another in a child process, each killed if it has not ended
    ``deadline_s`` after it started (its result "timeout"); the items after one that was killed (or that
    killed its child) go on in a new child. ``memory_bytes`` as in run_children, for each child. While it
    waits, ``on_beat`` is called every ``beat_s`` seconds in the caller's thread: a claim on the work kept
    alive however long one item takes. Results in the order of ``items``."""
    items = list(items)
    if not can_fork():
        return [_inline(lambda item=item: fn(item)) for item in items]
    beat = _Beat(beat_s, on_beat)
    results: list[ChildResult] = []
    while len(results) < len(items):
        results.extend(_each_in_one_child(fn, items[len(results) :], deadline_s, memory_bytes, beat))
    return results


@dataclass
class _Beat:
    every: float | None
    call: Callable[[], None] | None
    last: float = 0.0

    def __post_init__(self) -> None:
        self.last = time.monotonic()

    def due_in(self) -> float:
        if self.every is None or self.call is None:
            return float("inf")
        return max(0.0, self.last + self.every - time.monotonic())

    def maybe(self) -> None:
        if self.call is not None and self.due_in() == 0.0:
            self.last = time.monotonic()
            self.call()


def _each_in_one_child(
    fn: Callable[[Any], Any], items: list[Any], deadline_s: float, memory_bytes: int | None, beat: _Beat
) -> list[ChildResult]:
    """The results of the items one child got through: all of them, or those before the one that overran its
    deadline or ended the child, that one's result last."""
    read_fd, write_fd = os.pipe()
    pid = _fork()
    if pid == 0:  # pragma: no cover - the child; it never returns
        os.close(read_fd)
        _each_child_main(fn, items, write_fd, deadline_s, memory_bytes)
    os.close(write_fd)
    got: list[ChildResult] = []
    buffer = bytearray()
    item_started = time.monotonic()
    ended = killed = False
    status = 0
    try:
        with selectors.DefaultSelector() as waiting:
            waiting.register(read_fd, selectors.EVENT_READ)
            while len(got) < len(items) and not ended:
                left = item_started + deadline_s - time.monotonic()
                if left <= 0:
                    killed = True
                    break
                for _ in waiting.select(min(left, beat.due_in())):
                    data = os.read(read_fd, 1 << 20)
                    if not data:
                        ended = True
                        break
                    buffer += data
                    while len(buffer) >= _FRAME.size:
                        (size,) = _FRAME.unpack_from(buffer)
                        if len(buffer) < _FRAME.size + size:
                            break
                        payload = bytes(buffer[_FRAME.size : _FRAME.size + size])
                        del buffer[: _FRAME.size + size]
                        now = time.monotonic()
                        got.append(_outcome(payload, 0, now - item_started, False))
                        item_started = now
                beat.maybe()
    finally:
        if len(got) < len(items) and not ended:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
        os.close(read_fd)
    if len(got) < len(items):
        got.append(_outcome(b"", status, time.monotonic() - item_started, killed))
    return got
