"""Where a process's CPU goes, by Python function: sampling profilers weighted by CPU time, for the benchmarks
(bench.throughput --profile). Off unless PROFILE_DIR is set.

A process with threads (a worker, beat, the crawl command): every INTERVAL seconds a thread of its own reads
each thread's CPU clock (`pthread_getcpuclockid`) and gives what the thread spent since the last look to the
functions on its stack: to the innermost its own time, to each function on the stack once its cumulative
time. A thread that spent nothing costs no stack walk, so forty idle fetch threads cost a clock read each;
what a thread spends in C (lxml, the database driver) counts to the Python function that called it. A thread
found blocked (in a system call other than a lock's, or idle on a lock of threading or queue) spent its CPU
before it blocked, in code the look did not see: its callers get it, and its own time is booked as
`waiting: <function>` (callers known, function not). cProfile would see one thread only and slow every
call; a thread-CPU timer read on every call would cost more than a page does.

A forked child (the parse's child, crawler.child, or a prefork pool's) has one thread: a SIGPROF timer on the
process's CPU (ITIMER_PROF) samples it where it runs, every CPU_INTERVAL seconds of CPU, and it writes its profile
when it ends (os._exit, which a child ends with, writes it first), under the pid of the process the profile
started in (`origin`), so a parse's children count with their worker.

It counts only while the file `PROFILE_DIR/on` exists (the benchmark makes it for the crawl's span), and
writes `PROFILE_DIR/<pid>.json` when it stops counting, every DUMP_EVERY seconds meanwhile, and at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

INTERVAL = 0.01  # wall seconds between two looks at a process's threads (a busy thread yields the GIL every 5 ms)
CPU_INTERVAL = 0.005  # CPU seconds between two samples of a forked child
FLAG_EVERY = 0.5  # seconds between two looks for the `on` file
DUMP_EVERY = 5.0
# futex(2), the system call of a thread waiting for a lock (the GIL among them), by machine.
FUTEX = {"x86_64": 202, "aarch64": 98}.get(os.uname().machine, -1)
_IDLE_WAITS = ("threading.py", "queue.py")  # a thread asleep on one of their locks is idle, not after the GIL

_ROOT = str(Path(__file__).resolve().parent.parent) + "/"
_LIBRARY = re.compile(r"^.*/(site-packages|lib/python3\.\d+)/")
_started: Profile | None = None
_hooked = False


def _stack(frame) -> list[str]:
    """The functions on a stack, the innermost first. Taken at once, holding the GIL: a frame whose thread
    has run on meanwhile may have lost its link to its caller."""
    out = []
    while frame is not None:
        out.append(_key(frame.f_code))
        frame = frame.f_back
    return out


def _key(code) -> str:
    """`path:line function` of a code object, the path from site-packages, the standard library or the root."""
    path = _LIBRARY.sub("", code.co_filename).removeprefix(_ROOT)
    return f"{path}:{code.co_firstlineno} {getattr(code, 'co_qualname', code.co_name)}"


class Profile:
    """CPU seconds by function, own and cumulative, while the `on` file exists; written as JSON."""

    def __init__(self, directory: Path, origin: int):
        self.dir, self.origin, self.pid = directory, origin, os.getpid()
        self.own: Counter[str] = Counter()
        self.cumulative: Counter[str] = Counter()
        self.total = self.before_wait = self.sampler_cpu = 0.0
        self.samples = 0
        self.counting = False
        self._flag_at = 0.0
        self._dump_at = time.monotonic() + DUMP_EVERY

    def add(self, stack: list[str], spent: float, *, waiting: bool = False) -> None:
        """`spent` CPU seconds to `stack` (`_stack`: the innermost function first)."""
        self.total += spent
        leaf = stack[0]
        if waiting:
            self.before_wait += spent
            leaf = f"waiting: {leaf}"
        self.own[leaf] += spent
        for key in set(stack):
            self.cumulative[key] += spent

    def tick(self, now: float) -> bool:
        """Whether to count now: the `on` file looked at every FLAG_EVERY, the profile written when counting
        stops and every DUMP_EVERY while it goes on."""
        if now >= self._flag_at:
            on, self._flag_at = (self.dir / "on").exists(), now + FLAG_EVERY
            if self.counting and not on:
                self.dump()
            self.counting = on
        if self.counting and now >= self._dump_at:
            self.dump()
            self._dump_at = now + DUMP_EVERY
        return self.counting

    def dump(self) -> None:
        if os.getpid() != self.pid:  # a forked child's copy of its parent's profile: not its own
            return
        out = {
            "pid": self.pid,
            "ppid": os.getppid(),
            "origin": self.origin,
            "argv": sys.argv,
            "cpu_s": round(self.total, 4),
            "before_wait_s": round(self.before_wait, 4),
            "samples": self.samples,
            "sampler_cpu_s": round(self.sampler_cpu, 4),
            "own": {k: round(v, 5) for k, v in self.own.most_common(300)},
            "cumulative": {k: round(v, 5) for k, v in self.cumulative.most_common(300)},
        }
        path = self.dir / f"{self.pid}.json"
        try:
            path.with_suffix(".tmp").write_text(json.dumps(out))
            path.with_suffix(".tmp").replace(path)
        except OSError:
            pass  # a profile is worth no crash of the process it watches


class ThreadSampler(Profile):
    """A process with threads, looked at from a thread of its own (the module's docstring)."""

    def __init__(self, directory: Path, origin: int):
        super().__init__(directory, origin)
        self._last: dict[int, float] = {}
        self._clocks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def start(self) -> ThreadSampler:
        self._thread.start()
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        if os.getpid() != self.pid:
            return
        self._stop.set()
        self._thread.join(2.0)
        self.dump()

    def _cpu(self, ident: int) -> float | None:
        try:
            clock = self._clocks.get(ident)
            if clock is None:
                clock = self._clocks[ident] = time.pthread_getcpuclockid(ident)
            return time.clock_gettime(clock)
        except (OSError, OverflowError):  # the thread ended since the frames were taken
            self._clocks.pop(ident, None)
            return None

    def sample(self) -> None:
        """One look at every thread but this one."""
        me, native = threading.get_ident(), {t.ident: t.native_id for t in threading.enumerate()}
        frames = sys._current_frames()
        spent_by: list[tuple[int, list[str], float, str]] = []
        for ident, frame in frames.items():
            cpu = None if ident == me else self._cpu(ident)
            if cpu is None:
                continue
            spent, self._last[ident] = cpu - self._last.get(ident, cpu), cpu
            if spent > 0:  # the stack now, before any read of /proc lets the thread run on
                spent_by.append((ident, _stack(frame), spent, frame.f_code.co_filename))
        for ident, stack, spent, filename in spent_by:
            self.add(stack, spent, waiting=_blocked(native.get(ident), filename))
        for gone in set(self._last) - set(frames):
            del self._last[gone]
            self._clocks.pop(gone, None)
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            was = self.counting
            if self.tick(time.monotonic()):
                if not was:
                    self._last.clear()  # what threads spent before counting is not counted
                self.sample()
            self.sampler_cpu = time.thread_time()


def _blocked(native_id: int | None, filename: str) -> bool:
    """Whether a thread sleeps in a wait (I/O, a sleep, an idle lock), not for the GIL or running in C."""
    try:
        with open(f"/proc/self/task/{native_id}/syscall") as f:
            call = f.read().split(None, 1)[0]
    except (OSError, IndexError):
        return False
    if call == "running":
        return False
    return int(call) != FUTEX or filename.endswith(_IDLE_WAITS)


class SignalSampler(Profile):
    """A forked child with one thread, sampled by SIGPROF every CPU_INTERVAL seconds of its CPU."""

    def start(self) -> SignalSampler:
        signal.signal(signal.SIGPROF, self._on_signal)
        signal.setitimer(signal.ITIMER_PROF, CPU_INTERVAL, CPU_INTERVAL)
        exit_now = os._exit

        def _exit(code: int) -> None:
            signal.setitimer(signal.ITIMER_PROF, 0)
            self.dump()
            exit_now(code)

        os._exit = _exit  # a child ends with os._exit: no atexit runs
        atexit.register(self.dump)
        return self

    def _on_signal(self, _signum, frame) -> None:
        if frame is not None and self.tick(time.monotonic()):
            self.add(_stack(frame), CPU_INTERVAL)
            self.samples += 1


def profile_start(directory: str) -> Profile | None:
    """Start this process's profiler into `directory` (nothing when empty, or when one runs already); a child
    forked later starts one of its own (SignalSampler)."""
    global _started, _hooked
    if not directory or _started is not None:
        return _started
    _started = ThreadSampler(Path(directory), os.getpid()).start()
    if not _hooked:
        _hooked = True
        os.register_at_fork(after_in_child=lambda: _in_child(directory))
    return _started


def _in_child(directory: str) -> None:
    global _started
    origin = _started.origin if _started is not None else os.getppid()
    try:
        _started = SignalSampler(Path(directory), origin).start()
    except ValueError:  # signals are for the main thread: a child that is not one goes unprofiled
        _started = None
