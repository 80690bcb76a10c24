"""Incident evidence in-process: what is kept of a failing answer (masked, bounded, binary as bytes), for
which changes, from which locations; how alerts quote it (controls gone, bounded, escaped for the channel,
off for a group); the incident page and who sees it; retention; the TLS phase and the kept first bytes of
the check client."""

from __future__ import annotations

import base64
import zlib
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, override_settings
from django.utils import timezone

from alerts.services.channels import channel_add
from alerts.services.send import notifications_send
from crawlcore.models import Exchange, Server
from crawlcore.services.exchanges import exchanges_drop_bodies
from crawler.http import FailureKind, FetchPolicy, FetchResult, Timings
from crawler.multicheck import CheckRequest, MultiChecker
from dashboard import cache
from dashboard.models import StatusPage
from monitoring.accepted_codes import AcceptedCodes
from monitoring.evidence import Answer, difference, excerpt, head_mask
from monitoring.models import Evidence, Incident, ServerMonitor
from monitoring.selectors_evidence import evidence_alert_lines, incident_view
from monitoring.services.checks import Checked, Target, checks_record
from monitoring.services.evidence import evidence_prune
from testweb.alerts import smtp_server, webhook_receiver
from testweb.evidence import turning_page

from .test_alerts_certs_content import certs, tls_server  # noqa: F401 - certs is a fixture used below

pytestmark = pytest.mark.django_db
SECRET = "tok-9f8e7d"
LATER = timezone.now() + timedelta(hours=2)


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def server(host: str, group: str = "campus", locations: str = "") -> Server:
    s = Server.objects.create(scheme="http", host=host, port=80, group=group)
    ServerMonitor.objects.create(server=s, name=f"{host} site", locations=locations)
    return s


def answer(status: int | None, body: bytes = b"", ctype: str = "text/plain; charset=utf-8", *, total: float = 40.0,
           tls: float | None = None, server_name: str = "app/1") -> FetchResult:  # fmt: skip
    head = (
        f"HTTP/1.1 {status} X\r\nServer: {server_name}\r\nContent-Type: {ctype}\r\n"
        f"Set-Cookie: sid={SECRET}; Path=/\r\nX-Api-Key: {SECRET}\r\nContent-Length: {len(body)}"
        if status is not None
        else ""
    )
    return FetchResult(
        "http://x.example/health", "GET", status, {}, body, None if status else FailureKind.REFUSED,
        "connection refused" if status is None else "", False, len(body),
        Timings(1.5, 3.0, 25.0, 4.0, total, tls_ms=tls), "127.0.0.9" if status else None,
        request_head="GET /health HTTP/1.1\r\nHost: x.example\r\nAuthorization: Bearer " + SECRET,
        response_head=head,
    )  # fmt: skip


def feed(s: Server, results: list[FetchResult], *, start=None, threshold: float = 3.0) -> None:
    start = start or timezone.now() - timedelta(hours=1)
    for i, r in enumerate(results):
        target = Target(s.id, r.url, True, 300.0, threshold, AcceptedCodes(), 2, 1)
        if r.status is None:
            category = "disconnect"
        elif r.status >= 400:
            category = "error"
        else:
            category = "delay" if r.timings.total_ms > threshold * 1000 else "normal"
        checks_record(checked=[Checked(target, r, start + timedelta(minutes=i), category)])


def test_a_confirmed_error_keeps_the_answer_masked_and_within_the_budget():
    s = server("x.example")
    big = ("Service Unavailable: the database is gone. " * 6000).encode()  # ~250 KiB
    feed(s, [answer(200, b"fine"), answer(503, big, tls=2.0), answer(503, big, tls=2.0)])
    ev = Evidence.objects.select_related("exchange").get()
    incident = Incident.objects.get()
    assert incident.status_change_id == ev.status_change_id
    ex = ev.exchange
    assert ex.kind == Exchange.MONITOR and ex.status == 503 and ex.truncated == "length"
    kept = zlib.decompress(bytes(ex.body_z))
    assert len(kept) == 64 * 1024 and big.startswith(kept)
    stored = len(ex.request_head) + len(ex.response_head) + len(ex.body_z) + len(str(ev.timings)) + len(
        str(ev.locations)) + len(str(ev.last_good)) + len(ev.difference)  # fmt: skip
    assert stored <= 100 * 1024
    assert SECRET not in ex.request_head + ex.response_head
    assert "Set-Cookie: sid=****" in ex.response_head and "X-Api-Key: ****" in ex.response_head
    assert "Authorization: Bearer ****" in ex.request_head
    view = incident_view(incident)["evidence"]
    assert view["status_code"] == 503 and view["body_excerpt"].startswith("Service Unavailable")
    # connect_ms (3.0) was TCP and TLS together: the evidence says each apart.
    assert view["timings_ms"] == {
        "dns": 1.5,
        "connect": 1.0,
        "tls": 2.0,
        "first_byte": 25.0,
        "body": 4.0,
        "total": 40.0,
    }
    assert view["size"] == len(big) and view["truncated"] is True
    assert view["last_good"]["status_code"] == 200 and view["last_good"]["source"] == "monitor"
    assert view["difference"].startswith("status 200 → 503; size 4 → ")
    assert view["locations"] == [{"location": None, "verdict": "error", "status_code": 503}]


def test_a_change_into_delay_keeps_evidence_and_opens_no_incident():
    s = server("x.example")
    feed(s, [answer(200, b"ok"), answer(200, b"slow", total=5000.0), answer(200, b"slow", total=5000.0)])
    ev = Evidence.objects.get()
    assert ev.category == "delay" and ev.status_change.to_status == "delay" and not Incident.objects.exists()


def test_a_disconnect_keeps_what_was_measured_without_an_archive_record():
    s = server("x.example")
    feed(s, [answer(None), answer(None)])
    ev = Evidence.objects.get()
    assert ev.exchange_id is None and ev.status_code is None and ev.failure_kind == "refused"
    assert not Exchange.objects.exists()
    assert evidence_alert_lines(status_change_ids=[ev.status_change_id])[ev.status_change_id].startswith(
        "no answer (connection refused)"
    )


def test_a_binary_body_is_kept_as_bytes_not_text():
    s = server("x.example")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    feed(s, [answer(500, png, "image/png"), answer(500, png, "image/png")])
    view = incident_view(Incident.objects.get())["evidence"]
    assert view["body_excerpt"] == "" and base64.b64decode(view["body_base64"]) == png


def test_every_location_that_took_part_has_its_verdict():
    s = server("x.example", locations="1,2")
    start = timezone.now() - timedelta(hours=1)
    for num in (1, 2):
        with override_settings(CRAWLER_NUM=num):
            feed(
                s, [answer(502, b"bad gateway"), answer(502, b"bad gateway")], start=start + timedelta(minutes=5 * num)
            )
    ev = Evidence.objects.get()
    assert ev.locations == [
        {"location": "1", "verdict": "error", "status_code": 502},
        {"location": "2", "verdict": "error", "status_code": 502},
    ]


def test_the_alert_line_drops_controls_is_bounded_and_names_the_slowest_phase():
    s = server("x.example")
    body = "Fatal\x1b[31m error\x00 in\u202e module\r\n" + "y" * 1000
    feed(s, [answer(500, body.encode()), answer(500, body.encode())])
    ev = Evidence.objects.get()
    line = evidence_alert_lines(status_change_ids=[ev.status_change_id])[ev.status_change_id]
    assert line.startswith('answered 500; "Fatal [31m error in module y')
    assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F or ch == "\u202e" for ch in line)
    quoted = line.split('"')[1]
    assert len(quoted) == 300 and line.endswith("slowest phase first byte 25 ms")
    with override_settings(ALERTS_NO_EXCERPT_GROUPS=("campus",)):
        quiet = evidence_alert_lines(status_change_ids=[ev.status_change_id])[ev.status_change_id]
    assert quiet == "answered 500; slowest phase first byte 25 ms"


def test_alerts_by_email_and_apprise_carry_the_excerpt_escaped_for_the_channel():
    s = server("x.example")
    smtp = "django.core.mail.backends.smtp.EmailBackend"
    with smtp_server() as box, webhook_receiver() as rx:
        to_box = {"EMAIL_BACKEND": smtp, "EMAIL_HOST": box.host, "EMAIL_PORT": box.port}
        with override_settings(**to_box, ALERTS_ALLOW_PRIVATE=["127.0.0.0/8"]):
            channel_add(name="mail", url="noc@example.org", events="down")
            channel_add(name="md", url=f"{rx.base}/md?format=markdown".replace("http://", "json://"), events="down")
            body = b"<b>*Database* down</b> [see](http://evil.example)"
            feed(s, [answer(500, body), answer(500, body)])
            sent = notifications_send(now=LATER)
        assert sorted(x.ok for x in sent) == [True, True]
    mail = box.messages[0].get_payload(decode=True).decode()
    assert 'answered 500; "<b>*Database* down</b> [see](http://evil.example)"' in mail
    assert f"/dashboard/incidents/{Incident.objects.get().id}/" in mail
    message = rx.received[0].body["message"]
    # A Markdown channel gets the text escaped: the server's words cannot become emphasis or a link there.
    assert r"\*Database\*" in message and r"\[see\]" in message
    assert rx.received[0].body["events"][0]["answered"].startswith("answered 500")


def _viewer(name: str, group: str) -> Client:
    user = User.objects.create_user(name, password="unused-pw-1")
    user.groups.add(
        Group.objects.get_or_create(name="viewer")[0], Group.objects.get_or_create(name=f"servers:{group}")[0]
    )
    client = Client()
    client.force_login(user)
    return client


def test_the_incident_page_shows_the_evidence_to_its_group_only_and_the_server_page_links_it():
    s = server("x.example")
    feed(s, [answer(200, b"ok"), answer(500, b"<script>alert(1)</script> pool exhausted"),
             answer(500, b"<script>alert(1)</script> pool exhausted")])  # fmt: skip
    incident = Incident.objects.get()
    mine, other = _viewer("a", "campus"), _viewer("b", "physics")
    page = mine.get(f"/dashboard/incidents/{incident.id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; pool exhausted" in html and "<script>alert(1)" not in html
    assert 'id="timings-chart"' in html and "status 200 → 500" in html and "sid=****" in html and SECRET not in html
    assert other.get(f"/dashboard/incidents/{incident.id}/").status_code == 404
    assert f"/dashboard/incidents/{incident.id}/" in mine.get(f"/dashboard/servers/{s.id}/").content.decode()


def test_the_public_status_page_shows_the_incident_and_nothing_it_answered():
    s = server("x.example")
    feed(s, [answer(500, b"pool exhausted on db-7"), answer(500, b"pool exhausted on db-7")])
    StatusPage.objects.create(slug="campus", group="campus")
    html = Client().get("/status/campus/").content.decode()
    assert "x.example" in html and "down" in html
    assert "pool exhausted" not in html and "db-7" not in html and "app/1" not in html


@override_settings(EVIDENCE_RETENTION_DAYS=30.0, ARCHIVE_KEEP_ERROR_BODIES_DAYS=1.0)
def test_evidence_is_kept_for_its_own_retention_then_removed_with_its_exchange():
    s = server("x.example")
    feed(s, [answer(500, b"gone"), answer(500, b"gone")], start=timezone.now() - timedelta(days=10))
    assert exchanges_drop_bodies() == 0  # the error bodies' retention leaves evidence alone
    assert evidence_prune() == 0
    assert evidence_prune(now=timezone.now() + timedelta(days=25)) == 1
    assert not Evidence.objects.exists() and not Exchange.objects.exists()
    assert Incident.objects.get().status_change_id is not None  # the incident and its updates stay


def test_head_mask_and_difference_read_as_one_line_each():
    head = "HTTP/1.1 500 X\r\nCookie: a=1; b=2\r\nProxy-Authorization: Basic abc\r\nX-Session-Id: 77\r\nServer: s"
    assert head_mask(head) == (
        "HTTP/1.1 500 X\r\nCookie: a=****; b=****\r\nProxy-Authorization: Basic ****\r\nX-Session-Id: ****\r\nServer: s"
    )
    good = Answer(200, 10, "aa", "text/html; charset=utf-8", "nginx")
    assert difference(good, Answer(200, 10, "aa", "text/html", "nginx")) == (
        "the same status, size and headers as the last good answer"
    )
    assert difference(good, Answer(502, 3, "bb", "text/plain", "envoy")) == (
        "status 200 → 502; size 10 → 3 bytes; checksum differs; content type text/html → text/plain; "
        "server nginx → envoy"
    )
    assert difference(None, Answer(500)) == "no good answer of this URL is on record"
    assert excerpt("a\tb\n\nc  d", 300) == "a b c d" and excerpt("x" * 400, 10) == "xxxxxxxxx…"


def test_the_check_client_keeps_only_the_first_bytes_asked_for():
    with turning_page("127.0.0.1", b"0123456789" * 1000, "c") as page, MultiChecker(FetchPolicy()) as checker:
        (timed,) = checker.check_all([CheckRequest(page.origin + "/", keep_first_bytes=25)])
    r = timed.result
    assert r.status == 200 and r.body == b"0123456789012345678901234" and r.bytes_received == 10000
    assert r.timings.tls_ms is None


def test_an_https_check_measures_its_tls_handshake_apart(certs, monkeypatch):  # noqa: F811 - the fixture
    import crawler.http

    monkeypatch.setattr(crawler.http, "_CA", str(certs["ca"]))
    with tls_server(certs["soon"], certs["key"]) as url, MultiChecker(FetchPolicy()) as checker:
        (timed,) = checker.check_all([CheckRequest(url)])
    t = timed.result.timings
    assert timed.result.status == 200 and t.tls_ms is not None and 0 < t.tls_ms <= t.connect_ms


def test_the_failing_answer_is_an_archive_exchange_and_an_incidents_export_takes_only_those():
    from archive.selectors import ExportScope, exchanges_export_chunks, incidents_scope

    s = server("x.example")
    feed(s, [answer(500, b"broken"), answer(500, b"broken")])
    Exchange.objects.create(server=s, requested_url="http://x.example/other", fetched_at=timezone.now(), status=404)
    every = [c for chunk in exchanges_export_chunks(scope=ExportScope()) for c in chunk]
    assert sorted(c.url for c in every) == ["http://x.example/health", "http://x.example/other"]
    failing = next(c for c in every if c.url.endswith("/health"))
    assert failing.body == b"broken" and ("fetched-as", "monitor") in failing.verdict
    only = [c for chunk in exchanges_export_chunks(scope=incidents_scope(ExportScope())) for c in chunk]
    assert [c.url for c in only] == ["http://x.example/health"]


@override_settings(CRAWL_CONNECT_TIMEOUT=2.0, CRAWL_HEADER_TIMEOUT=1.0, CRAWL_BODY_TIMEOUT=2.0, MONITOR_RETRIES=0)
def test_an_https_outage_keeps_the_certificate_it_was_shown(certs, monkeypatch):  # noqa: F811 - the fixture
    import crawler.http
    from monitoring.server_list import parse_server_row
    from monitoring.services.checks import monitors_check
    from monitoring.services.servers import servers_import

    monkeypatch.setattr(crawler.http, "_CA", str(certs["ca"]))
    with tls_server(certs["expired"], certs["key"]) as url:
        ids = servers_import(trusted=True, rows=[parse_server_row([url])]).server_ids
        for _ in range(2):
            monitors_check(server_ids=ids, claim=False)
    ev = Evidence.objects.get()
    assert (ev.category, ev.failure_kind, ev.status_code) == ("error", "tls", None)
    assert ev.certificate["subject"] == "CN = 127.0.0.1" and ev.certificate["issuer"] == "CN = crawladmin test CA"
    assert ev.certificate["not_after"] is not None


def test_the_archive_and_evidence_settings_reach_django_with_their_defaults():
    from django.conf import settings

    # The error bodies' retention read a setting Django never had (its prefix was not exported): beat's job
    # failed with an AttributeError.
    assert exchanges_drop_bodies() == 0 and settings.ARCHIVE_KEEP_ERROR_BODIES_DAYS == 90.0
    assert (settings.EVIDENCE_BODY_BYTES, settings.EVIDENCE_MAX_BYTES) == (65536, 102400)
    assert settings.EVIDENCE_RETENTION_DAYS == 90.0 and settings.ARCHIVE_REPLAY_URL == ""
