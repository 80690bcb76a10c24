"""Certificates and content checks with real checks: https servers on loopback with
certificates made by openssl for the test (one expiring in 5 days, one expired, one for another name),
and a health page whose text fails a content rule."""

from __future__ import annotations

import http.server
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.test import override_settings

from alerts.models import Event, Notification
from alerts.services.channels import channel_add
from crawlcore.models import StatusCheck
from monitoring.content import ContentRule, content_failure
from monitoring.models import ServerCertificate, ServerMonitor
from monitoring.server_list import parse_server_row
from monitoring.services.checks import monitors_check
from monitoring.services.servers import servers_import
from testweb.monitor import scripted

FAST = {"CRAWL_CONNECT_TIMEOUT": 2.0, "CRAWL_HEADER_TIMEOUT": 1.0, "CRAWL_BODY_TIMEOUT": 2.0}
pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certs(d: Path) -> dict[str, Path]:
    """A test CA and three leaf certificates it signed: 'soon' (5 days, for 127.0.0.1), 'expired' (0 days,
    for 127.0.0.1) and 'other' (valid, but for other.example only)."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-subj", "/CN=crawladmin test CA", "-days", "30", cwd=d)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr",
             "-subj", "/CN=127.0.0.1", cwd=d)  # fmt: skip
    out = {}
    for name, days, san in (
        ("soon", "5", "IP:127.0.0.1"),
        ("expired", "0", "IP:127.0.0.1"),
        ("other", "30", "DNS:other.example"),
    ):  # noqa: E501
        (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
        _openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", days, "-extfile", f"{name}.ext", cwd=d)  # fmt: skip
        out[name] = d / f"{name}.pem"
    out["ca"], out["key"] = d / "ca.pem", d / "leaf.key"
    return out


class _Ok(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")


@contextmanager
def tls_server(cert: Path, key: Path) -> Iterator[str]:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    time.sleep(1.1)  # the 0-day certificate's end is now in the past
    return certs


@override_settings(**FAST, ALERTS_CERT_DAYS=(21, 7, 1))
def test_certificate_expiry_and_invalid_certificates_are_told(db, certs, monkeypatch):
    import crawler.http

    monkeypatch.setattr(crawler.http, "_CA", str(certs["ca"]))  # trust the test CA, as certifi's are
    with (
        tls_server(certs["soon"], certs["key"]) as soon,
        tls_server(certs["expired"], certs["key"]) as expired,
        tls_server(certs["other"], certs["key"]) as other,
    ):
        ids = servers_import(trusted=True, rows=[parse_server_row([u]) for u in (soon, expired, other)]).server_ids
        channel_add(name="certs", url="json://127.0.0.1:9/", events="cert")
        for _ in range(3):  # N=2 confirms the invalid ones; the third round repeats nothing
            monitors_check(server_ids=ids, claim=False)
    sid = dict(zip(("soon", "expired", "other"), ids, strict=True))
    status = dict(ServerMonitor.objects.values_list("server_id", "status"))
    assert status == {sid["soon"]: "normal", sid["expired"]: "error", sid["other"]: "error"}
    bad = StatusCheck.objects.filter(server_id=sid["expired"]).first()
    assert (bad.category, bad.failure_kind) == ("error", "tls") and "expired" in bad.detail
    cert = ServerCertificate.objects.get(server_id=sid["soon"])
    assert (cert.subject, cert.issuer, cert.names) == ("CN = 127.0.0.1", "CN = crawladmin test CA", ["127.0.0.1"])
    assert 4.9 < (cert.not_after - cert.checked_at).total_seconds() / 86400 < 5.01
    assert ServerCertificate.objects.get(server_id=sid["other"]).names == ["other.example"]
    events = {(e.server_id, e.kind, e.to_status): e.reason for e in Event.objects.all()}
    assert set(events) == {
        (sid["soon"], "cert", ""),
        (sid["expired"], "cert", "error"),
        (sid["other"], "cert", "error"),
    }
    assert events[(sid["soon"], "cert", "")].startswith("certificate expires in 5 days (")
    assert Notification.objects.count() == 3  # all routed to the cert channel, each once


@override_settings(**FAST)
def test_content_check_failing_and_passing_again(db):
    with scripted("127.0.0.240", [200]) as web:  # every answer's body: "status 200"
        sid = servers_import(trusted=True, rows=[parse_server_row([web.url])]).server_ids[0]
        ServerMonitor.objects.filter(server_id=sid).update(content_must=r"status \d+", content_regex=True)
        channel_add(name="content", url="json://127.0.0.1:9/", events="content")
        monitors_check(server_ids=[sid], claim=False)
        assert ServerMonitor.objects.get(server_id=sid).status == "normal"
        ServerMonitor.objects.filter(server_id=sid).update(
            content_must="", content_must_not="status 200", content_regex=False
        )
        monitors_check(server_ids=[sid], claim=False)
        monitors_check(server_ids=[sid], claim=False)
        check = StatusCheck.objects.order_by("-id").first()
        assert (check.category, check.failure_kind, check.detail) == ("error", "content", "contains 'status 200'")
        assert ServerMonitor.objects.get(server_id=sid).status == "error"
        ServerMonitor.objects.filter(server_id=sid).update(content_must_not="")
        monitors_check(server_ids=[sid], claim=False)
    kinds = list(Event.objects.order_by("id").values_list("kind", "from_status", "to_status"))
    assert kinds == [("content", "normal", "error"), ("content", "error", "normal")]
    assert Notification.objects.count() == 2


def test_content_rules_plain_regex_and_time_bound():
    assert content_failure(b"<h1>Welcome</h1>", ContentRule(must="Welcome")) is None
    assert content_failure(b"<h1>Welcome</h1>", ContentRule(must="Hello")) == "does not contain 'Hello'"
    assert (
        content_failure(b"db error 42", ContentRule(must_not=r"error \d+", is_regex=True)) == r"contains 'error \\d+'"
    )
    slow = content_failure(b"a" * 40 + b"!", ContentRule(must=r"(a|aa)+$", is_regex=True), timeout_s=0.05)
    assert slow == "content check took longer than 0.05s"
