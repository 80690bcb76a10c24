"""Ports for the servers the tests and benchmarks start on loopback: free when chosen, and below the kernel's
ephemeral range.

A port asked of the kernel (bind to port 0, then close) comes from the ephemeral range, the one outgoing
connections take their local ports from. Between choosing it and the server binding it, a test makes many
connections (to PostgreSQL, to Redis, migrations, health checks), and any of them may be given that very
port: the server then fails with "Address already in use" (test_deploy's gunicorn, once in a full run). Below
the ephemeral range only an explicit bind takes a port, so the window is gone."""

from __future__ import annotations

import random
import socket
from pathlib import Path

FLOOR = 10000  # above the well-known and most registered service ports
_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_choose = random.SystemRandom()


def ephemeral_low() -> int:
    """The lowest port the kernel gives outgoing connections (32768 when it cannot be read)."""
    try:
        return int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing is bound to at `host` now, chosen at random below the ephemeral range; with no room there
    (a range set unusually low), one the kernel gives."""
    high = ephemeral_low()
    for _ in range(200 if high - FLOOR >= 1000 else 0):
        port = _choose.randrange(FLOOR, high)
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
