"""Monitors besides HTTP: TCP connects (banner, TLS, the private-address guard), DNS lookups against a local
nameserver (expected records, NXDOMAIN, silence), heartbeats (late, unfinished, failed) and their ping
endpoint (no login, 404 like any unknown address for a wrong token, rate-limited, bounded body); each kind's
checks through the same confirmation as HTTP."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from crawlcore.models import StatusCheck
from crawler.http import FetchPolicy
from crawler.netguard import forbidden_reason, parse_cidrs
from crawler.status import Category
from monitoring.kinds.dns import DnsSpec, dns_check
from monitoring.kinds.heartbeat import HeartbeatSpec, heartbeat_verdict
from monitoring.kinds.tcp import TcpSpec, tcp_check
from monitoring.models import ServerMonitor
from monitoring.services import kinds
from monitoring.services.checks import monitors_check
from monitoring.services.monitors import LIMITED, OK, UNKNOWN, heartbeat_ping, monitor_add
from testweb.monitor_kinds import closed_port, dns_server, tcp_listener

POLICY = FetchPolicy(connect_timeout=5.0, header_timeout=2.0, body_timeout=5.0, dns_timeout=5.0)
LOOPBACK = parse_cidrs("127.0.0.0/8")
ALLOW = {"CRAWL_ALLOW_PRIVATE": ("127.0.0.0/8",), "MONITOR_RETRIES": 0}
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def allow(ip: str) -> str | None:
    return forbidden_reason(ip, LOOPBACK)


def guard(ip: str) -> str | None:
    return forbidden_reason(ip, ())


# --------------------------------------------------------------------------------------------------
# TCP


def test_tcp_open_port_is_normal_and_closed_port_is_a_refused_disconnect():
    with tcp_listener() as listener:
        ok = tcp_check(TcpSpec("127.0.0.1", listener.port), policy=POLICY, guard=allow, threshold_s=30)
    assert ok.category is Category.NORMAL and ok.failure == "" and ok.result.timings.connect_ms is not None
    closed = tcp_check(TcpSpec("127.0.0.1", closed_port()), policy=POLICY, guard=allow, threshold_s=30)
    assert (closed.category, closed.failure) == (Category.DISCONNECT, "refused")


def test_tcp_banner_expected_found_or_an_error_naming_what_came():
    with tcp_listener(banner=b"220 mail.example ESMTP ready\r\n") as listener:
        good = tcp_check(
            TcpSpec("127.0.0.1", listener.port, banner="ESMTP"), policy=POLICY, guard=allow, threshold_s=30
        )
        bad = tcp_check(
            TcpSpec("127.0.0.1", listener.port, banner="SSH-2.0"), policy=POLICY, guard=allow, threshold_s=30
        )
    assert good.category is Category.NORMAL
    assert (bad.category, bad.failure) == (Category.ERROR, "banner")
    assert "'SSH-2.0' expected" in bad.detail and "220 mail.example" in bad.detail


def test_tcp_silent_server_with_a_banner_expected_is_a_disconnect_at_the_header_deadline():
    quick = FetchPolicy(connect_timeout=5.0, header_timeout=0.5, dns_timeout=5.0)
    with tcp_listener() as listener:
        r = tcp_check(TcpSpec("127.0.0.1", listener.port, banner="220"), policy=quick, guard=allow, threshold_s=30)
    assert (r.category, r.failure) == (Category.DISCONNECT, "header_timeout")


def test_tcp_tls_handshake_with_a_plain_server_is_an_error():
    with tcp_listener(banner=b"not tls at all\r\n") as listener:
        r = tcp_check(TcpSpec("127.0.0.1", listener.port, tls=True), policy=POLICY, guard=allow, threshold_s=30)
    assert (r.category, r.failure) == (Category.ERROR, "tls")


def test_tcp_private_address_is_refused_by_the_guard_and_never_dialled():
    with tcp_listener() as listener:
        r = tcp_check(TcpSpec("127.0.0.1", listener.port), policy=POLICY, guard=guard, threshold_s=30)
        assert listener.accepted == 0
    assert (r.category, r.failure) == (Category.DISCONNECT, "forbidden_address")
    # The crawl's refusal, word for word (crawler.resolve): neither the address a name has nor its kind told.
    assert r.detail == "127.0.0.1: not an address the crawl may reach (CRAWL_ALLOW_PRIVATE)"


# --------------------------------------------------------------------------------------------------
# DNS

RECORDS = {("www.example.test", "A"): ["192.0.2.1", "192.0.2.2"], ("example.test", "MX"): ["10 mx.example.test."]}


def test_dns_expected_record_set_and_its_own_failure_kinds():
    with dns_server(RECORDS) as ns:

        def run(name: str, rtype: str = "A", expected: frozenset[str] = frozenset()):
            spec = DnsSpec(name, rtype, expected, ns.nameserver)
            return dns_check(spec, timeout=5.0, guard=allow, threshold_s=30)

        same = run("www.example.test", expected=frozenset({"192.0.2.2", "192.0.2.1"}))
        other = run("www.example.test", expected=frozenset({"192.0.2.9"}))
        mx = run("example.test", "MX", frozenset({"10 mx.example.test"}))
        missing = run("nowhere.example.test")
        no_type = run("example.test", "AAAA")
    assert same.category is Category.NORMAL and mx.category is Category.NORMAL
    assert (other.category, other.failure) == (Category.ERROR, "records")
    assert "192.0.2.1, 192.0.2.2" in other.detail and "192.0.2.9" in other.detail
    assert (missing.category, missing.failure) == (Category.ERROR, "nxdomain")
    assert (no_type.category, no_type.failure) == (Category.ERROR, "no_answer")


def test_dns_silent_nameserver_is_a_disconnect_within_the_deadline():
    with dns_server(RECORDS) as ns:
        ns.silent = True
        r = dns_check(DnsSpec("www.example.test", nameserver=ns.nameserver), timeout=1.0, guard=allow, threshold_s=30)
    assert (r.category, r.failure) == (Category.DISCONNECT, "dns_timeout")
    assert r.result.timings.total_ms < 20_000


def test_dns_nameserver_on_a_private_address_needs_allowing():
    with dns_server(RECORDS) as ns:
        r = dns_check(DnsSpec("www.example.test", nameserver=ns.nameserver), timeout=5.0, guard=guard, threshold_s=30)
        assert ns.queries == 0
    assert (r.category, r.failure) == (Category.DISCONNECT, "forbidden_address")


# --------------------------------------------------------------------------------------------------
# Heartbeat, pure


def beat(**kw) -> HeartbeatSpec:
    return HeartbeatSpec(**{"name": "backup", "period_s": 60.0, "grace_s": 30.0, "since": T0, **kw})


def test_heartbeat_is_late_only_after_period_plus_grace():
    pinged = beat(last_ping_at=T0, last_ping_kind="success")
    assert heartbeat_verdict(pinged, T0 + timedelta(seconds=89))[0] is Category.NORMAL
    category, failure, detail = heartbeat_verdict(pinged, T0 + timedelta(seconds=91))
    assert (category, failure) == (Category.DISCONNECT, "late") and "period 60s + grace 30s" in detail
    assert heartbeat_verdict(beat(), T0 + timedelta(seconds=91))[1] == "late"  # never pinged: from its adding


def test_heartbeat_fail_signal_and_a_run_that_never_finished():
    failed = beat(last_ping_at=T0, last_ping_kind="fail")
    assert heartbeat_verdict(failed, T0 + timedelta(seconds=1))[:2] == (Category.ERROR, "fail_signal")
    started = beat(last_ping_at=T0, last_ping_kind="success", started_at=T0 + timedelta(seconds=10))
    assert heartbeat_verdict(started, T0 + timedelta(seconds=39))[0] is Category.NORMAL
    assert heartbeat_verdict(started, T0 + timedelta(seconds=41))[:2] == (Category.DISCONNECT, "unfinished")
    finished = beat(
        last_ping_at=T0 + timedelta(seconds=20), last_ping_kind="success", started_at=T0 + timedelta(seconds=10)
    )
    assert heartbeat_verdict(finished, T0 + timedelta(seconds=41))[0] is Category.NORMAL


# --------------------------------------------------------------------------------------------------
# A round of kind checks


@pytest.mark.parametrize("threads", [1, 4])
def test_a_check_that_overruns_its_deadlines_holds_the_round_no_longer_than_the_rounds_own(monkeypatch, threads):
    """A check stuck past its phase deadlines (a call that ignores them) is given up at the round's deadline:
    it counts as a disconnect saying so, and the checks that ended keep their own results."""
    release, run = threading.Event(), kinds._run_one

    def stuck(spec, policy, guard, threshold_s, now):
        if spec.name == "stuck":
            release.wait(10)
        return run(spec, policy, guard, threshold_s, now)

    monkeypatch.setattr(kinds, "_run_one", stuck)
    quick = FetchPolicy(connect_timeout=0.2, header_timeout=0.2, body_timeout=0.2, dns_timeout=0.2)
    started = time.monotonic()
    try:
        with override_settings(MONITOR_THREADS=threads):
            out = kinds.kinds_run(jobs=[(beat(), None, 5.0), (beat(name="stuck"), None, 5.0)], policy=quick)
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert (out[0].category, out[0].failure) == (Category.DISCONNECT, "late")  # never pinged: its own verdict
    assert (out[1].category, out[1].failure) == (Category.DISCONNECT, "deadline")
    assert "no result within the round's deadline" in out[1].detail and out[1].result.url == "heartbeat:stuck"


# --------------------------------------------------------------------------------------------------
# Through the check round and the ping endpoint (database)


@override_settings(**ALLOW)
def test_every_kind_goes_through_the_same_confirmation(db):
    with tcp_listener() as listener, dns_server(RECORDS) as ns:
        tcp_up = monitor_add(kind="tcp", target=listener.target, name="db port").monitor
        tcp_down = monitor_add(kind="tcp", target=f"127.0.0.1:{closed_port()}", name="closed port").monitor
        dns_ok = monitor_add(
            kind="dns", target="www.example.test", expected="192.0.2.1,192.0.2.2", nameserver=ns.nameserver
        ).monitor
        hb = monitor_add(kind="heartbeat", target="nightly backup", every_s=60, grace_s=30).monitor
        ids = [tcp_up.server_id, tcp_down.server_id, dns_ok.server_id, hb.server_id]
        ServerMonitor.objects.filter(pk=hb.pk).update(last_ping_at=datetime.now(UTC) - timedelta(seconds=200))
        for _ in range(2):  # MONITOR_FAIL_AFTER=2: two failed rounds confirm
            checked = {c.server_id: c for c in monitors_check(server_ids=ids, claim=False)}
    status = dict(ServerMonitor.objects.values_list("server_id", "status"))
    assert status == {tcp_up.pk: "normal", tcp_down.pk: "disconnect", dns_ok.pk: "normal", hb.pk: "disconnect"}
    assert checked[hb.pk].failure == "late" and checked[tcp_down.pk].result.method == "TCP"
    kinds = dict(StatusCheck.objects.filter(server_id=hb.pk).values_list("method", "failure_kind").distinct())
    assert kinds == {"PING": "late"}
    assert heartbeat_ping(token=hb.ping_token) == OK
    monitors_check(server_ids=[hb.pk], claim=False)
    assert ServerMonitor.objects.get(pk=hb.pk).status == "normal"  # MONITOR_RECOVER_AFTER=1


def test_add_monitor_prints_the_ping_url_and_refuses_bad_targets_in_one_line(db, capsys):
    call_command("add_monitor", "heartbeat", "nightly backup", "--every", "3600", "--grace", "600", "--group", "ops")
    out = capsys.readouterr().out
    token = ServerMonitor.objects.get(kind="heartbeat").ping_token
    assert f"/ping/{token}" in out and len(token) >= 32
    m = ServerMonitor.objects.get(ping_token=token)
    assert (m.name, m.period_s, m.grace_s, m.server.group) == ("nightly backup", 3600.0, 600.0, "ops")
    for args, message in [
        (("tcp", "db.example"), "not host:port"),
        (("tcp", "db.example:99999"), "not host:port"),
        (("dns", "bad name"), "not a DNS name"),
        (("http", "db.example", "--grace", "5"), "--grace is for heartbeat"),
        (("heartbeat", "x", "--every", "0"), "period (--every) must be within"),
    ]:
        with pytest.raises(CommandError, match=re.escape(message)):
            call_command("add_monitor", *args)


def test_ping_endpoint_needs_no_login_and_answers_get_head_post_start_fail(db, client):
    token = monitor_add(kind="heartbeat", target="job", every_s=60).monitor.ping_token
    assert client.get(f"/ping/{token}").status_code == 200
    assert client.head(f"/ping/{token}").status_code == 200
    assert client.post(f"/ping/{token}/start").status_code == 200
    m = ServerMonitor.objects.get(ping_token=token)
    assert m.ping_started_at is not None and m.last_ping_kind == "success"
    assert client.post(f"/ping/{token}/fail", data=b"disk full\x00", content_type="text/plain").status_code == 200
    m.refresh_from_db()
    assert (m.last_ping_kind, m.last_ping_body) == ("fail", "disk full")
    assert client.put(f"/ping/{token}").status_code == 405


@override_settings(MONITOR_PING_BODY_BYTES=100)
def test_ping_body_is_kept_bounded(db, client):
    token = monitor_add(kind="heartbeat", target="job", every_s=60).monitor.ping_token
    client.post(f"/ping/{token}", data=b"x" * 10_000, content_type="text/plain")
    assert ServerMonitor.objects.get(ping_token=token).last_ping_body == "x" * 100


def test_wrong_token_is_the_same_404_as_any_unknown_address(db, client):
    token = monitor_add(kind="heartbeat", target="job", every_s=60).monitor.ping_token
    unknown = client.get("/no-such-page-at-all")
    # The token with its last character changed (a token that ends in "X" itself once made this a real ping).
    wrong = token[:-1] + ("Y" if token.endswith("X") else "X")
    for path in (f"/ping/{wrong}", "/ping/short", f"/ping/{wrong}/fail", "/ping/../admin"):
        r = client.get(path)
        assert (r.status_code, r.content, r["Content-Type"]) == (404, unknown.content, unknown["Content-Type"]), path
    assert ServerMonitor.objects.get(ping_token=token).last_ping_at is None


@override_settings(MONITOR_PING_RATE=3)
def test_pings_are_rate_limited_per_token(db, client):
    a = monitor_add(kind="heartbeat", target="a", every_s=60).monitor.ping_token
    b = monitor_add(kind="heartbeat", target="b", every_s=60).monitor.ping_token
    assert [client.get(f"/ping/{a}").status_code for _ in range(4)] == [200, 200, 200, 429]
    assert client.get(f"/ping/{b}").status_code == 200  # another token is not held back
    later = datetime.now(UTC) + timedelta(seconds=61)
    assert heartbeat_ping(token=a, now=later) == OK  # a new minute
    assert heartbeat_ping(token="x" * 40) == UNKNOWN and LIMITED == "limited"


@override_settings(**ALLOW)
@override_settings(**ALLOW)  # the DNS monitor's nameserver is on loopback
def test_dashboard_grid_and_server_pages_show_every_kind(db, admin_client):
    with tcp_listener() as listener:
        tcp = monitor_add(kind="tcp", target=listener.target, name="db port").monitor
        hb = monitor_add(kind="heartbeat", target="nightly backup", every_s=60).monitor
        dns = monitor_add(kind="dns", target="www.example.test", nameserver="127.0.0.1:1").monitor
        monitors_check(server_ids=[tcp.pk, hb.pk, dns.pk], claim=False)
    grid = admin_client.get("/dashboard/")
    assert grid.status_code == 200
    for m in (tcp, hb, dns):
        page = admin_client.get(f"/dashboard/servers/{m.pk}/")
        assert page.status_code == 200, m.kind
        # The ping URL is on the heartbeat's own page (for operators and superusers), on no other.
        assert (hb.ping_token in page.content.decode()) == (m is hb)
        assert admin_client.get(f"/admin/monitoring/servermonitor/{m.pk}/change/").status_code == 200
        assert admin_client.get(f"/admin/crawladmin/server/{m.pk}/change/").status_code == 200
