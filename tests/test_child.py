"""crawler.child: calls in child processes, each stopped at its deadline, side by side."""

from __future__ import annotations

import os
import resource
import time

import pytest

from crawler.child import run_children, run_each, run_in_child


def test_results_errors_and_memory_come_back_in_order():
    def boom() -> None:
        raise ValueError("nope")

    def hog() -> bytes:
        return b"x" * (512 * 1024 * 1024)

    got = run_children([lambda: 41 + 1, boom, hog], deadline_s=60, memory_bytes=64 * 1024 * 1024)
    assert [(r.ok, r.value, r.error) for r in got] == [
        (True, 42, ""),
        (False, None, "ValueError: nope"),
        (False, None, "memory"),
    ]


def test_a_call_that_hangs_is_killed_at_its_deadline_and_holds_no_other():
    started = time.monotonic()
    slow, quick = run_children([lambda: time.sleep(600), lambda: os.getpid()], deadline_s=2)
    assert slow.timed_out and not slow.ok
    assert quick.ok and quick.value != os.getpid()  # ran in a child, not here
    assert time.monotonic() - started < 60


def test_a_child_whose_parent_is_gone_stops_itself():
    # The child's own timer: a grandchild started by a child that is then killed still ends on time.
    def orphaning() -> int:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            run_in_child(lambda: (os.write(w, str(os.getpid()).encode()), time.sleep(600)), deadline_s=1)
            os._exit(0)
        os.close(w)
        grandchild = int(os.read(r, 32) or b"0")
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        return grandchild

    result = run_in_child(orphaning, deadline_s=60)
    assert result.ok and result.value > 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{result.value}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):  # ended, not yet reaped by init
                    break
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the orphaned child is still running")


def test_each_item_has_its_own_deadline_and_the_rest_go_on_in_a_new_child():
    def work(item):
        if item == "hang":
            time.sleep(600)
        if item == "die":
            os._exit(3)
        return (item, os.getpid())

    beats: list[float] = []
    started = time.monotonic()
    got = run_each(work, ["a", "hang", "b", "die", "c"], deadline_s=1.5, beat_s=0.2, on_beat=lambda: beats.append(1))
    took = time.monotonic() - started
    assert [r.ok for r in got] == [True, False, True, False, True]
    assert got[1].timed_out and not got[3].timed_out
    assert [r.value[0] for r in got if r.ok] == ["a", "b", "c"]
    pids = {r.value[1] for r in got if r.ok}
    assert os.getpid() not in pids and len(pids) == 3  # a new child after the hang and after the death
    assert took < 10
    assert len(beats) >= 5  # the caller's beat kept going while the hanging item ran


def test_children_are_waited_for_past_descriptor_1023():
    # select() cannot watch a descriptor past FD_SETSIZE: hold 1,100 open ones so the pipes land above it.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1300
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.fail(f"the hard limit of open files ({hard}) is below {want}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    held = []
    try:
        for _ in range(550):
            held.extend(os.pipe())
        assert max(held) > 1023
        assert run_in_child(lambda: 7, deadline_s=30).value == 7
        assert [r.value for r in run_each(lambda x: x * 2, [1, 2], deadline_s=30)] == [2, 4]
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _private_dirty_kb() -> int:
    with open("/proc/self/smaps_rollup") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Private_Dirty:"))


def test_a_child_collecting_garbage_copies_none_of_the_parents_objects():
    # Each child is a copy-on-write fork: a collection in it would write to the header of every object it
    # scans, copying the parent's pages one by one. The parent's objects are frozen for the child's collector.
    import gc

    kept = [{"n": i, "s": str(i)} for i in range(400_000)]  # ~80 MB of tracked objects in the parent

    def collect() -> int:
        before = _private_dirty_kb()
        gc.collect()
        return _private_dirty_kb() - before

    copied_kb = run_in_child(collect, deadline_s=60).value
    assert copied_kb < 8 * 1024, f"the child's collection copied {copied_kb} KB of the parent's pages"
    assert gc.get_freeze_count() == 0  # the parent collects its objects as before
    del kept
