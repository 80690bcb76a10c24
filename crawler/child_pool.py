"""Bounded calls like crawler.child.run_each's, served by a few long-lived small processes instead of a fork of
the caller per batch.

Each item still runs within its own deadline and memory allowance, in a process that is killed past them, and
the items after it go on in another. What changes is where that process comes from. run_each forks the caller:
for a crawl worker that is a copy of ~150 MB and its threads' heap, made again for every batch, and while the
copy lives every page the worker's other threads write is copied too. Here a process is started once, with
``python -m crawler.child_pool``, imports only the function it serves (sent to it pickled, that is by its
module and name), and serves one item after another
(at most ``POOL_SIZE`` of them for one function and allowance; a caller waits for a free one). It is replaced
when an item overruns, runs out of memory or kills it, and after ``RECYCLE_AFTER`` items.

What the caller gives up for it: the function must be a module-level one, whose module imports no Django (it
is imported afresh in the process: a closure cannot be sent, and a function replaced in the caller's module at
run time is not what runs); each item and each result is pickled through a pipe. A process ends when its
caller's end of the pipe closes (the caller exited or was killed), and an item it was given then still ends by
its own timer (SIGALRM, as in crawler.child).
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .child import _SELF_STOP_AFTER_S, ChildResult, _Beat, _outcome, _outcome_kind_bytes, _vm_bytes

__all__ = ["POOL_SIZE", "RECYCLE_AFTER", "pool_pids", "run_pooled"]

POOL_SIZE = max(2, os.cpu_count() or 2)  # processes for one function and allowance: the work is CPU-bound
RECYCLE_AFTER = 5000  # items a process serves before it is replaced, so its heap's fragments do not pile up
_FRAME = struct.Struct("!Q")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(eq=False)
class _Proc:
    popen: subprocess.Popen
    served: int = 0

    @property
    def pid(self) -> int:
        return self.popen.pid

    def end(self, *, kill: bool) -> int:
        """Stop it (at once with `kill`, else by closing its input) and reap it; its wait status."""
        for stream in (self.popen.stdin, self.popen.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if kill:
            try:
                self.popen.kill()
            except ProcessLookupError:
                pass
        try:
            self.popen.wait(timeout=None if kill else 2.0)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        code = self.popen.returncode
        # Popen's return code (-N: signal N) as a wait status for crawler.child._outcome.
        return (-code) & 0x7F if code < 0 else (code & 0xFF) << 8


class _Pool:
    """The processes of one function and allowance: idle ones, and how many exist."""

    def __init__(self) -> None:
        self.idle: list[_Proc] = []
        self.count = 0


_pools: dict[tuple[str, int | None], _Pool] = {}
_lock = threading.Condition()


def _forget_after_fork() -> None:
    """In a forked child of the caller: the parent's processes are not this one's to use (their pipes stay
    the parent's); start afresh."""
    global _lock
    for pool in _pools.values():
        for proc in pool.idle:
            for stream in (proc.popen.stdin, proc.popen.stdout):
                try:
                    if stream is not None:
                        os.close(stream.fileno())
                except (OSError, ValueError):
                    pass
    _pools.clear()
    _lock = threading.Condition()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _spawn(fn: Callable[[Any], Any], memory_bytes: int | None) -> _Proc:
    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    popen = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
        [sys.executable, "-m", "crawler.child_pool", str(memory_bytes or 0)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
        env=env,
        cwd=_ROOT,
        close_fds=True,
    )
    proc = _Proc(popen)
    if not _send(proc, pickle.dumps(fn)):  # its first message: the function it serves
        proc.end(kill=True)
        raise OSError("the pool's process ended at its start")
    return proc


def _borrow(key: tuple[str, int | None], fn: Callable[[Any], Any], beat: _Beat) -> _Proc:
    """An idle process of the pool, or a new one while there are fewer than POOL_SIZE; else wait for one
    (the caller's beat kept meanwhile)."""
    while True:
        with _lock:
            pool = _pools.setdefault(key, _Pool())
            if pool.idle:
                return pool.idle.pop()
            if pool.count < POOL_SIZE:
                pool.count += 1
                break
            _lock.wait(min(1.0, beat.due_in()))
        beat.maybe()
    try:
        return _spawn(fn, key[1])
    except BaseException:
        _gone(key)
        raise


def _give_back(key: tuple[str, int | None], proc: _Proc) -> None:
    with _lock:
        pool = _pools.get(key)
        if pool is not None:
            pool.idle.append(proc)
            _lock.notify()
            return
    proc.end(kill=False)  # the pools were forgotten (a fork) since it was borrowed


def _gone(key: tuple[str, int | None]) -> None:
    with _lock:
        pool = _pools.get(key)
        if pool is not None:
            pool.count -= 1
            _lock.notify()


def _key(fn: Callable[[Any], Any], memory_bytes: int | None) -> tuple[str, int | None]:
    return f"{fn.__module__}:{fn.__qualname__}", memory_bytes


def pool_pids(fn: Callable[[Any], Any], memory_bytes: int | None = None) -> list[int]:
    """The idle processes of a function and allowance (for tests and diagnostics)."""
    with _lock:
        pool = _pools.get(_key(fn, memory_bytes))
        return [proc.pid for proc in pool.idle] if pool else []


def run_pooled(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    deadline_s: float,
    memory_bytes: int | None = None,
    beat_s: float | None = None,
    on_beat: Callable[[], None] | None = None,
) -> list[ChildResult]:
    """``fn(item)`` for each item (``fn`` a module-level function, see the module's docstring), one after
    another in one of the pool's processes, each killed if it has not ended ``deadline_s`` after it was sent (its result
    "timeout"); the items after one that was killed (or that ended its process) go on in another.
    ``memory_bytes``: how much address space a process may take beyond what it holds once started. While it
    waits, ``on_beat`` is called every ``beat_s`` seconds in the caller's thread. Results in the order of
    ``items``."""
    key = _key(fn, memory_bytes)
    beat = _Beat(beat_s, on_beat)
    results: list[ChildResult] = []
    proc: _Proc | None = None
    try:
        for item in items:
            try:
                payload = pickle.dumps((deadline_s, item))
            except Exception as exc:  # noqa: BLE001 - this item's failure, not the batch's
                results.append(ChildResult(False, error=f"item not picklable: {exc}"[:500]))
                continue
            current = proc if proc is not None else _borrow(key, fn, beat)
            proc = None  # while an item is in flight, the process is nobody's to give back
            result, proc = _one(key, fn, current, payload, deadline_s, beat)
            results.append(result)
    finally:
        if proc is not None:
            _give_back(key, proc)
    return results


def _send(proc: _Proc, payload: bytes) -> bool:
    try:
        fd = proc.popen.stdin.fileno()
        view = memoryview(_FRAME.pack(len(payload)) + payload)
        while view:
            view = view[os.write(fd, view) :]
        return True
    except (OSError, ValueError):
        return False


def _one(key, fn, proc: _Proc, payload: bytes, deadline_s: float, beat: _Beat) -> tuple[ChildResult, _Proc | None]:
    """One item through `proc`: its result, and the process if it can serve the next one. Whatever interrupts
    the wait (the caller's beat raising, say) ends the process: a reply still to come must reach nobody."""
    holder = [proc]
    try:
        return _one_through(key, fn, holder, payload, deadline_s, beat)
    except BaseException:
        if holder[0] is not None:
            _drop(key, holder, kill=True)
        raise


def _drop(key, holder: list, *, kill: bool) -> int:
    """End the process `holder` holds and take it off the pool's count; its wait status."""
    proc, holder[0] = holder[0], None
    status = proc.end(kill=kill)
    _gone(key)
    return status


def _one_through(
    key, fn, holder: list, payload: bytes, deadline_s: float, beat: _Beat
) -> tuple[ChildResult, _Proc | None]:
    proc = holder[0]
    if not _send(proc, payload):
        # It ended while idle (killed from outside): the item never started; a new process takes it.
        _drop(key, holder, kill=True)
        proc = holder[0] = _borrow(key, fn, beat)
        if not _send(proc, payload):
            return _outcome(b"", _drop(key, holder, kill=True), 0.0, False), None
    started = time.monotonic()
    fd = proc.popen.stdout.fileno()
    buffer = bytearray()
    with selectors.DefaultSelector() as waiting:
        waiting.register(fd, selectors.EVENT_READ)
        while True:
            left = started + deadline_s - time.monotonic()
            if left <= 0:
                _drop(key, holder, kill=True)
                return ChildResult(False, error="timeout", seconds=time.monotonic() - started), None
            for _ in waiting.select(min(left, beat.due_in())):
                data = os.read(fd, 1 << 20)
                if not data:  # it ended: killed by its own timer, by the memory cap, or it crashed
                    status = _drop(key, holder, kill=True)
                    return _outcome(b"", status, time.monotonic() - started, False), None
                buffer += data
            beat.maybe()
            if len(buffer) >= _FRAME.size:
                (size,) = _FRAME.unpack_from(buffer)
                if len(buffer) >= _FRAME.size + size:
                    break
    retire, outcome = buffer[_FRAME.size], bytes(buffer[_FRAME.size + 1 : _FRAME.size + size])
    result = _outcome(outcome, 0, time.monotonic() - started, False)
    proc.served += 1
    if retire or proc.served >= RECYCLE_AFTER:
        _drop(key, holder, kill=False)
        return result, None
    return result, proc


# -- the pool's process ----------------------------------------------------------------------------------------


def _read_exact(stream, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _serve(memory_bytes: int) -> None:
    """Read the function (the first message), then an item at a time: run it under its timer, write its
    outcome; until the caller closes the pipe. An item that ran out of memory, or left the process holding
    half its allowance more than at the start, retires it."""
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    head = _read_exact(requests, _FRAME.size)
    data = _read_exact(requests, _FRAME.unpack(head)[0]) if head is not None else None
    if data is None:
        return
    fn = pickle.loads(data)  # imports the function's module, as an import of it would
    sys.stdout = sys.stderr  # what the function prints goes to the log, never into the replies
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    start_vm = _vm_bytes()
    if memory_bytes and start_vm is not None:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = start_vm + memory_bytes
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    while True:
        head = _read_exact(requests, _FRAME.size)
        if head is None:
            return
        data = _read_exact(requests, _FRAME.unpack(head)[0])
        if data is None:
            return
        deadline_s, item = pickle.loads(data)
        signal.setitimer(signal.ITIMER_REAL, deadline_s + _SELF_STOP_AFTER_S)
        kind, outcome = _outcome_kind_bytes(lambda item=item: fn(item))
        signal.setitimer(signal.ITIMER_REAL, 0)
        vm = _vm_bytes()
        retire = kind == "memory"
        if memory_bytes and vm is not None and start_vm is not None and vm - start_vm > memory_bytes // 2:
            retire = True
        replies.write(_FRAME.pack(len(outcome) + 1) + bytes([retire]) + outcome)
        replies.flush()
        if retire:
            return


if __name__ == "__main__":  # pragma: no cover - the pool's process
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.stderr.write("usage: python -m crawler.child_pool MEMORY_BYTES (started by crawler.child_pool itself)\n")
        sys.exit(2)
    try:
        _serve(int(sys.argv[1]))
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    os._exit(0)
