"""A server's health: the pure rules (crawler.hosthealth), the one service that writes the record
(crawlcore.services.health) and the selector every reader asks (crawlcore.selectors_health)."""

from __future__ import annotations

import random
import socket
import threading
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from crawlcore.models import Server, ServerHealthEvent
from crawlcore.selectors_health import health_counts, held_server_ids, server_health, server_health_history
from crawlcore.services import health
from crawler.hosthealth import BackoffRule, PaceRule, p95, pace

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


# -- the rules ------------------------------------------------------------------------------------------


def test_backoff_doubles_from_a_minute_up_to_a_day_within_ten_percent():
    rule = BackoffRule()
    rng = random.Random(7)
    for strikes, plain in ((1, 60), (2, 120), (3, 240), (5, 960)):
        for _ in range(50):
            s = rule.seconds(strikes, rng=rng)
            assert plain * 0.9 <= s <= plain * 1.1
    assert rule.seconds(30, rng=rng) <= 86400
    assert rule.seconds(30, rng=rng) >= 86400 * 0.9


def test_backoff_repeats_are_forgiven_after_thirty_quiet_minutes():
    rule = BackoffRule()
    assert rule.strikes(0, None, T0) == 1
    assert rule.strikes(3, T0, T0 + timedelta(minutes=29)) == 4
    assert rule.strikes(3, T0, T0 + timedelta(minutes=30)) == 1


def test_retry_after_is_honoured_up_to_its_cap():
    rule = BackoffRule(retry_after_cap=3600)
    assert rule.asked(None) is None
    assert rule.asked(120) == 120
    assert rule.asked(10**7) == 3600


def test_pace_follows_p95_and_raises_on_failures_then_comes_down():
    rule = PaceRule(factor=2.0, window=20, cap=30.0, min_samples=10)
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    slow = pace([1500.0] * 20, rule=rule, base_delay=1.0, error_floor=0.0)
    assert slow.p95_ms == 1500.0 and slow.delay == 3.0
    fast = pace([10.0] * 20, rule=rule, base_delay=1.0, error_floor=0.0)
    assert fast.delay < 1.0  # politeness alone is enough: not slow
    # No politeness delay at all: a pace of a few milliseconds is none (rule.least), a pace from 25 ms on is one
    assert pace([10.0] * 20, rule=rule, base_delay=0.0, error_floor=0.0).delay == 0.0
    assert pace([30.0] * 20, rule=rule, base_delay=0.0, error_floor=0.0).delay == 0.06
    failing = pace([10.0] * 10 + [None] * 10, rule=rule, base_delay=1.0, error_floor=0.0)
    assert failing.error_share == 0.5 and failing.delay == 2.0
    worse = pace([10.0] * 10 + [None] * 10, rule=rule, base_delay=1.0, error_floor=failing.error_floor)
    assert worse.delay == 4.0
    better = pace([10.0] * 20, rule=rule, base_delay=1.0, error_floor=worse.error_floor)
    assert better.delay == 2.0
    assert pace([10.0] * 20, rule=rule, base_delay=1.0, error_floor=better.error_floor).delay < 1.0


def test_pace_raises_its_failure_floor_on_new_failures_only_not_on_old_ones_still_in_the_window():
    rule = PaceRule(factor=1.0, window=50, cap=30.0, min_samples=10)
    burst = pace([10.0] * 19 + [None] * 11, rule=rule, base_delay=0.0, error_floor=0.0)
    assert burst.error_share >= 0.25 and burst.delay == 1.0
    # Three more readings of a few answers each, all good: the 11 failures are still over a quarter of the
    # window, but nothing new failed, so the floor holds where it was instead of doubling each reading.
    window, floor = [10.0] * 19 + [None] * 11, burst.error_floor
    for _ in range(3):
        window += [10.0] * 3
        again = pace(window, rule=rule, base_delay=0.0, error_floor=floor, new=3)
        assert again.delay == 1.0
        floor = again.error_floor
    # A new failure with the share still high: failures go on piling up, so the floor doubles.
    assert pace(window + [None], rule=rule, base_delay=0.0, error_floor=floor, new=1).delay == 2.0


# -- the service and the selector -----------------------------------------------------------------------


@pytest.fixture
def server(db):
    return Server.objects.create(scheme="http", host="h.example", port=80)


@pytest.mark.django_db
def test_a_server_with_no_record_is_healthy(server):
    assert server_health(server=server) == {
        "state": "healthy", "reason": "", "source": "", "since": None, "until": None,
    }  # fmt: skip


@pytest.mark.django_db
def test_operator_pause_until_then_lapses(server):
    now = timezone.now()
    until = now + timedelta(hours=1)
    assert health.health_pause(server_ids=[server.id], by="alice", until=until, now=now) == 1
    h = server_health(server=server, now=now)
    assert h["state"] == "paused" and h["source"] == "operator" and h["until"] == until.isoformat()
    assert "alice" in h["reason"]
    assert health.health_admit(server_id=server.id, now=now) == health.HELD
    assert server.id in held_server_ids(now=now)
    later = until + timedelta(seconds=1)
    assert server_health(server=server, now=later)["state"] == "healthy"
    assert health.health_admit(server_id=server.id, now=later) == health.GO


@pytest.mark.django_db
def test_pause_in_the_past_is_refused(server):
    with pytest.raises(health.HealthError):
        health.health_pause(server_ids=[server.id], by="alice", until=timezone.now() - timedelta(seconds=1))


@pytest.mark.django_db
def test_resume_lifts_the_operators_pause_and_leaves_the_monitors_hold(server):
    health.health_pause(server_ids=[server.id], by="alice")
    health.health_hold(server_ids=[server.id], source="monitor", reason="2 checks in a row: disconnect")
    assert server_health(server=server)["state"] == "paused"
    assert health.health_resume(server_ids=[server.id], by="alice") == 1
    h = server_health(server=server)
    assert h["state"] == "down" and h["source"] == "monitor" and "disconnect" in h["reason"]
    assert health.health_resume(server_ids=[server.id], by="alice") == 0


@pytest.mark.django_db
def test_down_gets_one_probe_per_window_and_the_monitors_up_releases(server):
    now = timezone.now()
    health.health_hold(server_ids=[server.id], source="monitor", reason="x", now=now)
    assert health.health_admit(server_id=server.id, now=now) == health.HELD
    at = now + timedelta(seconds=67)  # past the first window (60 s ± 10 %)
    assert health.health_admit(server_id=server.id, now=at) == health.PROBE
    assert health.health_admit(server_id=server.id, now=at) == health.HELD  # one probe per window
    health.health_probe_done(server_id=server.id, answered=False, now=at)
    assert health.health_admit(server_id=server.id, now=at + timedelta(seconds=100)) == health.HELD  # doubled
    assert health.health_release(server_ids=[server.id], source="monitor") == 1
    assert health.health_admit(server_id=server.id) == health.GO
    assert server_health(server=server)["state"] == "healthy"
    states = list(ServerHealthEvent.objects.filter(server=server).order_by("id").values_list("state", flat=True))
    assert states == ["down", "healthy"]
    assert [e["state"] for e in server_health_history(server_id=server.id)] == ["healthy", "down"]


@pytest.mark.django_db
def test_a_probe_answered_lifts_the_hold(server):
    now = timezone.now()
    health.health_hold(server_ids=[server.id], source="robots", reason="HTTP 503", now=now)
    h = server_health(server=server, now=now)
    assert h["state"] == "down" and h["source"] == "robots" and h["until"] is not None
    assert health.health_admit(server_id=server.id, now=now + timedelta(seconds=70)) == health.PROBE
    health.health_probe_done(server_id=server.id, answered=True)
    assert server_health(server=server)["state"] == "healthy"


@pytest.mark.django_db
def test_rate_limited_without_retry_after_doubles_and_the_monitor_up_lifts_a_503(server):
    now = timezone.now()
    first = health.health_rate_limited(server_id=server.id, status=429, retry_after=None, now=now)
    assert 54 <= (first - now).total_seconds() <= 66
    second = health.health_rate_limited(server_id=server.id, status=429, retry_after=None, now=now)
    assert 108 <= (second - now).total_seconds() <= 132
    h = server_health(server=server, now=now)
    assert h["state"] == "rate_limited" and h["source"] == "crawl" and "2nd" in h["reason"]
    Server.objects.filter(id=server.id).update(next_request_at=None)
    server.refresh_from_db()
    asked = health.health_rate_limited(server_id=server.id, status=503, retry_after=30.0, now=now)
    assert asked == second  # the longer wait already asked for stands
    assert Server.objects.get(id=server.id).next_request_at == second
    other = Server.objects.create(scheme="http", host="o.example", port=80)
    health.health_rate_limited(server_id=other.id, status=503, retry_after=None, now=now)
    health.health_release(server_ids=[other.id], source="monitor")
    assert server_health(server=other)["state"] == "healthy"


@pytest.mark.django_db
def test_readings_of_good_answers_after_one_burst_of_failures_do_not_keep_slowing_the_server(server):
    """A site with a dozen broken pages among thirty, crawled in small batches: one visit brings the failures,
    the next ones only good answers. The floor is raised once, not doubled at every visit's close while the old
    failures stay in the window (a crawl of the hostile web, paced to 4 s a request, outran its time bound)."""
    first = health.health_record_responses(server_id=server.id, samples=[5.0] * 19 + [None] * 11)
    raised = first.delay
    assert raised > 0
    for _ in range(4):
        later = health.health_record_responses(server_id=server.id, samples=[5.0] * 2)
        assert later.delay == raised
    assert health.health_record_responses(server_id=server.id, samples=[None]).delay == 2 * raised


@pytest.mark.django_db
def test_slow_shows_its_figures_and_counts_per_state(server):
    health.health_record_responses(server_id=server.id, samples=[2000.0] * 20)
    h = server_health(server=server)
    assert h["state"] == "slow" and "p95 2000 ms" in h["reason"] and "4.00 s" in h["reason"]
    Server.objects.create(scheme="http", host="p.example", port=80)
    assert health_counts() == {"healthy": 1, "slow": 1, "rate_limited": 0, "down": 0, "paused": 0}


# -- politeness per host and port, credentials never part of a URL ----------------------------------------


@pytest.mark.django_db
def test_http_and_https_on_one_host_and_port_share_the_slots_and_the_turns(settings):
    from crawlcore.services.servers import server_take_turn
    from crawlcore.services.visit import ServerVisit
    from crawler.lifecycle import Agent

    settings.CRAWL_SERVER_CONCURRENCY = 1
    settings.CRAWL_DEFAULT_DELAY = 30
    plain = Server.objects.create(scheme="http", host="127.0.0.1", port=8443, trusted=True)
    tls = Server.objects.create(scheme="https", host="127.0.0.1", port=8443, trusted=True)
    visit = ServerVisit.open(server_id=plain.id, owner="a", agent=Agent.LOAD)
    assert visit is not None
    assert ServerVisit.open(server_id=tls.id, owner="b", agent=Agent.LOAD) is None  # one connection at a time
    assert visit.wait_turn()  # the http visit's request starts now; the next one on host:port in 30 s
    visit.close()
    other = ServerVisit.open(server_id=tls.id, owner="b", agent=Agent.LOAD)
    assert other is not None and other.turn_id == plain.id
    assert server_take_turn(server_id=other.turn_id, delay=30) > 25  # the https request waits that turn
    other.close()


def test_credentials_in_a_link_are_no_part_of_its_identity():
    from crawler.urlnorm import canonicalize

    assert canonicalize("http://user:pass@h.example/x") == "http://h.example/x"
    assert canonicalize("/y", base="http://user:pass@h.example/x") == "http://h.example/y"
    assert canonicalize("HTTP://u@H.example:80/") == "http://h.example/"


# -- the pace reads the server's answer time, not this machine's load ---------------------------------------


@contextmanager
def _trickling_server(*, body_s: float, chunks: int = 6):
    """A local HTTP server whose headers go out at once and whose body comes in `chunks` over `body_s`."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        try:
            answering(conn)
        except OSError:  # the client went away mid-answer, or kept the connection and never came back
            pass

    def answering(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            while True:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(4096)
                    if not data:
                        return
                    head += data
                part = b"x" * 200
                answer_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
                conn.sendall(answer_head % (len(part) * chunks))
                for _ in range(chunks):
                    time.sleep(body_s / chunks)
                    conn.sendall(part)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@pytest.mark.django_db
def test_a_server_that_answers_at_once_is_not_paced_by_how_long_its_body_takes_to_read(settings):
    """The pace once took each exchange's whole time (total_ms): the time a request waited in a busy worker
    and the time its body took to be read counted as the server's slowness, and a loaded crawler paced, and
    showed as slow, every server it crawled. Here the headers come at once and the body in 150 ms."""
    from crawlcore.models import ServerHealth
    from crawlcore.services.visit import ServerVisit
    from crawler.lifecycle import Agent

    settings.CRAWL_DEFAULT_DELAY = 0
    with _trickling_server(body_s=0.15) as port:
        server = Server.objects.create(scheme="http", host="127.0.0.1", port=port, trusted=True)
        visit = ServerVisit.open(server_id=server.id, owner="a", agent=Agent.LOAD)
        assert visit is not None
        totals = []
        for i in range(10):
            assert visit.wait_turn()
            result = visit.fetch(f"http://127.0.0.1:{port}/p{i}")
            assert result.status == 200, result.detail
            totals.append(result.timings.total_ms)
            visit.record(result, None)
        visit.close()
    assert min(totals) >= 100  # each exchange took the body's time
    window = ServerHealth.objects.get(server=server).window
    assert len(window) == 10 and max(window) < 100, window  # the server's answer time, not the exchange's
    assert server_health(server=server)["state"] == "healthy"
