"""CPU and memory of processes from /proc: a process, its descendants (live and exited), the machine.

CPU figures are differences of two readings; a process tree's reading counts each live process's utime +
stime and the cutime + cstime of the children it reaped, so it stays exact however many children
(PostgreSQL backends, pool processes) come and go between the readings, as long as the root lives."""

from __future__ import annotations

import os
import time

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (field 3 onwards); [] once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """User + system CPU of one process (0 once it is gone); with `reaped`, plus its exited children's."""
    fields = stat(pid)
    return sum(int(x) for x in fields[11 : 15 if reaped else 13]) / TICK  # utime stime [cutime cstime]


def children(pid: int) -> list[int]:
    """The live children of every thread of a process."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def tree(pid: int) -> list[int]:
    """A process and all its live descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children(p)
    return out


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and all its descendants, live and exited."""
    return sum(cpu_seconds(p, reaped=True) for p in tree(pid))


def tree_rss(pid: int) -> int:
    """Resident bytes of a process tree (pages shared between its processes count in each)."""
    return sum(int(fields[21]) * PAGE for p in tree(pid) if (fields := stat(p)))


def tree_pss(pid: int) -> int:
    """Proportional set size of a process tree: each page shared by n processes counts 1/n in each, so a
    prefork pool's copy-on-write pages count once in the sum (RSS counts them in every child)."""
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def machine_cpu() -> tuple[float, float]:
    """(busy, all) CPU seconds of the whole machine since boot."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICK, sum(ticks) / TICK  # less idle and iowait


def waited(pids: list[int]) -> float:
    """Seconds the threads of these processes spent runnable but waiting for a CPU (/proc schedstat): on a
    shared machine, the part of a run that others' work took."""
    total = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return total / 1e9


def child_named(name: str) -> int | None:
    """The first child of this process whose command is `name`."""
    for pid in children(os.getpid()):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == name:
                    return pid
        except OSError:
            pass
    return None


def load_average() -> str:
    """The machine's 1, 5 and 15 minute load averages, as every benchmark prints them beside its figures."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


def settle(below: float = 1.5, *, at_most_s: float = 180.0, every_s: float = 2.0) -> float:
    """Wait until the 1-minute load average is under `below` (at most `at_most_s`): the average lags, so a run
    that follows another starts once the last one's tail has faded, not while the figure still shows it.
    Returns the seconds waited."""
    started = time.monotonic()
    while os.getloadavg()[0] >= below and time.monotonic() - started < at_most_s:
        time.sleep(every_s)
    return round(time.monotonic() - started, 1)


def wait_with_peak(pid: int, *, every: float = 0.1) -> tuple[int, int]:
    """Wait for a child: its exit status and its own peak resident bytes, the highest VmHWM read while it ran
    (every `every` s). Not wait4's ru_maxrss: Linux carries the high-water mark of the memory a process had
    before its exec into it, so a child of a 500 MB benchmark process would report 500 MB."""
    peak = 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), peak
        try:
            with open(f"/proc/{pid}/status") as f:
                hwm = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:")), 0)
        except OSError:
            hwm = 0
        peak = max(peak, hwm)
        time.sleep(every)
