"""crawler.child_pool: bounded calls served by long-lived small processes, each item within its deadline and
memory allowance, the batch going on past one that overruns, crashes or fails."""

from __future__ import annotations

import threading
import time

import pytest

from crawler import child_pool
from crawler.child_pool import POOL_SIZE, _key, pool_pids, run_pooled
from tests import pool_funcs


def test_results_come_in_order_and_one_process_serves_call_after_call():
    assert [r.value for r in run_pooled(pool_funcs.square, [1, 2, 3], deadline_s=5)] == [1, 4, 9]
    first = run_pooled(pool_funcs.pid, [0, 0], deadline_s=5)
    second = run_pooled(pool_funcs.pid, [0], deadline_s=5)
    assert first[0].value == first[1].value == second[0].value  # started once, not per call or per item
    assert pool_pids(pool_funcs.pid) == [first[0].value]


def test_an_item_past_its_deadline_is_killed_and_the_next_goes_on_in_another_process():
    started = time.monotonic()
    results = run_pooled(pool_funcs.sleep_then, [(0, "a"), (60, "b"), (0, "c")], deadline_s=1.0)
    assert time.monotonic() - started < 10
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].timed_out and results[2].value == "c"


def test_an_item_over_its_memory_allowance_says_memory_and_the_next_goes_on():
    results = run_pooled(pool_funcs.hog, [1, 400, 1], deadline_s=10, memory_bytes=100 * 1024 * 1024)
    assert results[0].ok and results[2].ok
    assert not results[1].ok and results[1].error == "memory"


def test_a_crash_or_an_exception_is_one_items_failure():
    results = run_pooled(pool_funcs.crash, [0], deadline_s=5) + run_pooled(pool_funcs.fail, [0], deadline_s=5)
    assert not results[0].ok and "signal" in results[0].error
    assert not results[1].ok and "ValueError: not this one" in results[1].error
    assert run_pooled(pool_funcs.square, [7], deadline_s=5)[0].value == 49


def test_an_item_that_cannot_be_sent_is_that_items_failure_alone():
    # (PostgreSQL's driver gives a bytea as a memoryview, which pickle refuses: a batch once failed whole on it)
    results = run_pooled(pool_funcs.square, [2, memoryview(b"x"), 3], deadline_s=5)
    assert [r.ok for r in results] == [True, False, True] and "not picklable" in results[1].error
    assert [results[0].value, results[2].value] == [4, 9]


def test_what_the_function_prints_does_not_break_the_replies():
    assert [r.value for r in run_pooled(pool_funcs.chatty, ["x", "y"], deadline_s=5)] == ["x", "y"]


def test_a_process_killed_while_idle_is_replaced():
    import os
    import signal

    (pid,) = [r.value for r in run_pooled(pool_funcs.pid, [0], deadline_s=5)]
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    again = run_pooled(pool_funcs.pid, [0], deadline_s=5)
    assert again[0].ok and again[0].value != pid


def test_the_callers_beat_goes_on_while_an_item_runs():
    beats: list[float] = []
    results = run_pooled(
        pool_funcs.sleep_then, [(1.2, "done")], deadline_s=5, beat_s=0.25, on_beat=lambda: beats.append(1)
    )
    assert results[0].value == "done" and len(beats) >= 3


def test_many_callers_share_at_most_pool_size_processes():
    seen: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        got = run_pooled(pool_funcs.sleep_then, [(0.2, None)], deadline_s=5)
        assert got[0].ok
        with lock:
            seen.extend(pool_pids(pool_funcs.sleep_then))

    threads = [threading.Thread(target=call) for _ in range(POOL_SIZE * 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    with child_pool._lock:
        assert child_pool._pools[_key(pool_funcs.sleep_then, None)].count <= POOL_SIZE
    assert len(set(seen)) <= POOL_SIZE


def test_a_beat_that_raises_ends_the_process_so_its_late_reply_reaches_no_other_caller():
    def failing_beat() -> None:
        raise RuntimeError("the database went away")

    with pytest.raises(RuntimeError):
        run_pooled(pool_funcs.sleep_then, [(0.6, "late")], deadline_s=5, beat_s=0.1, on_beat=failing_beat)
    assert [r.value for r in run_pooled(pool_funcs.sleep_then, [(0, "mine")], deadline_s=5)] == ["mine"]
    with child_pool._lock:
        assert child_pool._pools[_key(pool_funcs.sleep_then, None)].count <= POOL_SIZE
