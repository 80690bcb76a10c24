"""The monitor and the crawler share one host-health state, end to end: an embedded `manage.py crawl` (a
subprocess, as an operator runs it, the monitor checking every MONITOR_INTERVAL in the same process) of a
local web of 20 servers (testweb/flapping.py) where one answers every request 503 without Retry-After for its
first 40 s (DOWN_FOR) and then recovers, and one answers every third crawl request 429 without Retry-After. The
web app runs beside it, so the API is asked what it shows while each server is held.

What holds: every page of the 18 others is fetched; while the monitor has the first confirmed down, it gets at
most one crawl request per back-off window, and its crawl resumes within a check interval of the monitor's
recovery, every page fetched by the end; the second never gets a request sooner than its back-off after a 429.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from testweb.flapping import HEALTH, LIMITED, UNAVAILABLE, FlappingWeb

from .crawlcheck import ROOT, clean_env

pytestmark = pytest.mark.slow

INTERVAL = 5.0  # MONITOR_INTERVAL
BASE = 60.0  # CRAWL_BACKOFF_BASE (the default): a header-less 429/503 backs off this long, doubling
JITTER = 0.1
MAX_SECONDS = 150  # a net: the crawl ends by itself once the down server is done
SLACK = 1.0  # seconds of scheduling on a busy machine (a dispatcher round, a thread's wake-up)
# The outage ends well before the crawl's first probe of the server can go (its robots.txt, asked at the start,
# holds it for BASE ± 10 %), so it is the monitor's up that ends the spell. An outage as long as the window
# raced the probe: a probe a moment before the recovery failed, the next window (twice as long) went past
# the crawl's wait for a held server, and the crawl ended done with the server's pages never fetched (CI, 30
# Nov: no up recorded, no answered request); a probe a moment after it found the server before the monitor.
DOWN_FOR = 40.0


def _manage(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    assert proc.returncode == 0, f"manage.py {args[0]}: {proc.stderr[-3000:]}"
    return proc


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, token: str) -> dict | None:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None  # a busy moment of the dev server: the next poll asks again


def _config(web: FlappingWeb) -> str:
    """The 20 servers and their monitors (each checking /health), as `manage.py apply` reads them."""
    lines = ["servers:"]
    lines += [f"  - url: {web.origin(n)}\n    trusted: true" for n in web.names]
    lines.append("monitors:")
    lines += [f"  - server: {web.origin(n)}\n    health_url: {web.origin(n)}{HEALTH}" for n in web.names]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    data = tmp_path_factory.mktemp("health_web")
    env = clean_env(
        CRAWLADMIN_DATA_DIR=str(data),
        MONITOR_INTERVAL=str(INTERVAL),
        CRAWL_NR1_BACKOFF="20",
        CRAWL_NR2_BACKOFF="40",
        CRAWL_BACKOFF_BASE=str(BASE),
    )
    web = FlappingWeb(20, unavailable="s0", unavailable_for=DOWN_FOR, limited="s1", limit_every=3)
    web_started = False
    app = None
    try:
        web.start()
        web_started = True
        config = data / "servers.yaml"
        config.write_text(_config(web))
        _manage(env, "apply", str(config))
        port = _free_port()
        app = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        # A viewer and its token, in one process while the web app starts.
        token = _manage(env, "shell", "-c", "from django.contrib.auth.models import Group, User; "
                        "from dashboard.tokens import api_token_create; "
                        "u = User.objects.create_user('watcher', password='x-unused-1'); "
                        "u.groups.add(Group.objects.get(name='viewer')); "
                        "print(api_token_create(user=u)[1])").stdout.split()[-1]  # fmt: skip
        ids = _server_ids(data / "crawladmin.sqlite3", web)
        base = f"http://127.0.0.1:{port}"
        _wait_up(base, app)
        web.started = time.monotonic()  # the 503 minute starts with the crawl
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "crawl", "--json", "--no-progress", "--threads", "8",
             "--max-seconds", str(MAX_SECONDS), *web.seeds()],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        seen: dict[str, list[dict]] = {UNAVAILABLE: [], LIMITED: []}
        deadline = time.monotonic() + MAX_SECONDS + 60
        while proc.poll() is None and time.monotonic() < deadline:
            for role, name in ((UNAVAILABLE, "s0"), (LIMITED, "s1")):
                body = _get(f"{base}/api/v1/servers/{ids[name]}/", token)
                if body is not None and "health" in body:
                    seen[role].append(body["health"])
            time.sleep(1.0)
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert proc.returncode == 0, err[-4000:]
        yield web, json.loads(out), seen, _changes(data / "crawladmin.sqlite3", ids["s0"])
    finally:
        if app is not None:
            app.terminate()
            try:
                app.wait(timeout=30)
            except subprocess.TimeoutExpired:
                app.kill()
        if web_started:
            web.stop()


def _wait_up(base: str, app: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=5).read()
            return
        except OSError:
            if time.monotonic() > deadline or app.poll() is not None:
                raise AssertionError("the web app did not come up within 120 s") from None
            time.sleep(0.5)


def _server_ids(db: Path, web: FlappingWeb) -> dict[str, int]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT id, host, port FROM crawladmin_server").fetchall()
    finally:
        con.close()
    by_addr = {(host, port): sid for sid, host, port in rows}
    return {n: by_addr[(web.ips[n], web.port(n))] for n in web.names}


def _changes(db: Path, server_id: int) -> list[tuple[str, float]]:
    """The monitor's confirmed changes of the server: (to status, wall-clock time), in order."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT to_status, at FROM monitoring_statuschange WHERE server_id = ? ORDER BY at", (server_id,)
        ).fetchall()
    finally:
        con.close()
    return [(to, datetime.fromisoformat(at).timestamp()) for to, at in rows]


def _held_spell(web: FlappingWeb, changes: list[tuple[str, float]]) -> tuple[float, float]:
    """When the monitor confirmed the first server down, and when the spell ended: the monitor's up, or the crawl's
    own probe that found the server answering, whichever came first. The probe can come first: the server recovers
    within a back-off window's jitter of the probe, and the monitor confirms an up only a check or two later. The
    crawl then fetches the server's few pages at once, before the monitor's up, or ends, its monitor with it, and no
    up is ever recorded."""
    down = next(at for to, at in changes if to in ("error", "disconnect"))
    ups = [at for to, at in changes if to in ("normal", "delay") and at > down]
    ups += [h.at for h in web.crawl_hits("s0") if h.at > down and h.status == 200][:1]
    assert ups, f"the spell never ended: no up after the down at {down}, no answered request ({changes})"
    return down, min(ups)


def test_every_page_of_the_eighteen_healthy_servers_is_fetched(crawl):
    web, _summary, _seen, _changes = crawl
    for name in web.names[2:]:
        assert web.fetched(name) == web.page_paths(), name


def test_the_down_server_gets_at_most_one_request_per_back_off_window_while_confirmed_down(crawl):
    web, _summary, _seen, changes = crawl
    down, up = _held_spell(web, changes)
    during = [h.at for h in web.crawl_hits("s0") if down <= h.at <= up]
    # The first window is BASE ± 10 %; each failed probe doubles the next.
    for earlier, later in zip(during, during[1:], strict=False):
        assert later - earlier >= BASE * (1 - JITTER) - SLACK, during
    assert len(during) <= 1 + (up - down) // (BASE * (1 - JITTER))


def test_the_down_servers_crawl_resumes_within_a_check_interval_of_the_monitors_up(crawl):
    web, _summary, _seen, changes = crawl
    down, up = _held_spell(web, changes)
    after = [h.at for h in web.crawl_hits("s0") if h.at >= up]
    assert after and after[0] - up <= INTERVAL + SLACK, after[:3]
    assert web.fetched("s0") == web.page_paths()


def test_the_rate_limited_server_is_never_asked_sooner_than_its_back_off(crawl):
    web, _summary, _seen, _changes = crawl
    hits = web.crawl_hits("s1")
    limited = [i for i, h in enumerate(hits) if h.status == 429]
    assert limited, "the server never answered 429"
    for nth, i in enumerate(limited, start=1):
        if i + 1 < len(hits):
            wait = BASE * 2 ** (nth - 1) * (1 - JITTER)
            assert hits[i + 1].at - hits[i].at >= wait - SLACK, (nth, hits[i + 1].at - hits[i].at)


def test_the_api_shows_state_and_reason_while_each_is_held(crawl):
    _web, _summary, seen, _changes = crawl
    down = [h for h in seen[UNAVAILABLE] if h["state"] == "down"]
    assert down and all(h["reason"] and h["source"] in ("monitor", "robots") for h in down)
    assert any(h["source"] == "monitor" for h in down)
    limited = [h for h in seen[LIMITED] if h["state"] == "rate_limited"]
    assert limited and all("429" in h["reason"] and h["until"] for h in limited)


class _Hits:
    """The web's record of the crawl's requests, as the CI run of 29 Nov had it: the probe found s0 answering two
    seconds before the monitor recorded its up, and the crawl fetched every page in between."""

    def __init__(self, hits: list[tuple[float, int]]):
        from testweb.flapping import Hit

        self.hits = [Hit("s0", at, "GET", f"/p{i}", status) for i, (at, status) in enumerate(hits)]

    def crawl_hits(self, _name: str):
        return self.hits


def test_the_spell_ends_at_the_crawls_own_answered_probe_when_it_comes_before_the_monitors_up():
    hits = [(100.0, 503), (170.0, 503), (231.78, 200), (231.79, 200), (231.82, 200)]
    web = _Hits(hits)
    assert _held_spell(web, [("error", 177.77), ("normal", 233.81)]) == (177.77, 231.78)
    assert _held_spell(web, [("error", 177.77)]) == (177.77, 231.78)
    assert _held_spell(web, [("error", 177.77), ("normal", 200.0)]) == (177.77, 200.0)
