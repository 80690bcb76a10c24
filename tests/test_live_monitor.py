"""The embedded monitor the demo runs while it serves (crawladmin.live_monitor): it checks due servers on
their interval, so a server that stops answering goes amber, then red, within two check intervals."""

from __future__ import annotations

import time

import pytest
from django.db import OperationalError
from django.test import override_settings

from crawladmin import live_monitor
from dashboard import cache, selectors_grid
from monitoring.server_list import parse_server_row
from monitoring.services.servers import servers_import
from testweb import SiteSpec, TestWebServer

pytestmark = pytest.mark.django_db(transaction=True)  # the monitor's thread has its own connection
FAST = {"CRAWL_CONNECT_TIMEOUT": 0.5, "CRAWL_HEADER_TIMEOUT": 0.3, "CRAWL_BODY_TIMEOUT": 1.0}


def shown(origin: str) -> str:
    """The tile's status. The test database is SQLite in memory with a shared cache, which locks whole
    tables (the demo's WAL file lets readers through): a read that meets the monitor's write tries again."""
    for _ in range(50):
        cache.clear()
        try:
            return {t.origin: t.status for t in selectors_grid.grid_tiles(details=False)[1]}[origin]
        except OperationalError as exc:
            if "locked" not in str(exc):
                raise
            time.sleep(0.02)
    raise AssertionError("the test database stayed locked")


@override_settings(**FAST, MONITOR_INTERVAL=1.0, MONITOR_FAIL_AFTER=2)
def test_a_server_stopped_under_the_embedded_monitor_turns_amber_then_red(monkeypatch):
    monkeypatch.setattr(live_monitor, "TICK", 0.1)
    spec = SiteSpec(n_servers=1, pages_per_server=2, first_octet=174, silent_server=False, slow_server=False)
    with TestWebServer(spec) as web:
        host = web.web.hosts()[0]
        origin = f"http://{host}:{web.port}"
        servers_import(trusted=True, rows=[parse_server_row([f"{origin}/"])])
        with live_monitor.embedded_monitor():
            deadline = time.monotonic() + 10
            while shown(origin) != "normal" and time.monotonic() < deadline:
                time.sleep(0.1)
            assert shown(origin) == "normal"
            web.set_down(host)
            stopped, seen = time.monotonic(), []
            while "disconnect" not in seen and time.monotonic() - stopped < 10:
                status = shown(origin)
                if not seen or seen[-1] != status:
                    seen.append(status)
                time.sleep(0.05)
            took = time.monotonic() - stopped
    assert seen[-2:] == ["unconfirmed", "disconnect"], seen
    # Two intervals and two checks (each at most its timeouts); slack for a busy test machine.
    assert took < 2 * 1.0 + 2 * (0.5 + 0.3) + 2.5, took
