"""Functions crawler.child_pool's processes run in tests/test_child_pool.py (named, module-level, no Django)."""

from __future__ import annotations

import os
import signal
import time


def square(x):
    return x * x


def pid(_):
    return os.getpid()


def sleep_then(item):
    seconds, value = item
    time.sleep(seconds)
    return value


def hog(megabytes):
    return len(bytearray(megabytes * 1024 * 1024))


def crash(_):
    os.kill(os.getpid(), signal.SIGSEGV)


def fail(_):
    raise ValueError("not this one")


def chatty(x):
    print("a line a function prints")  # must not reach the replies
    return x
