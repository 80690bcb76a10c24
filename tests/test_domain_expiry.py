"""Domain registration expiry by RDAP over HTTPS, against a local RDAP stub (a test CA's certificate): the
registrable domain of each monitored host, answers kept for a day, alerts at 30/7/1 days left as for
certificates, "unknown" with why when the registry does not know the domain or cannot be reached, and the
registry's address through the private-address guard."""

from __future__ import annotations

import http.server
import json
import shutil
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings

from alerts.models import Event
from alerts.services.channels import channel_add
from monitoring.models import DomainExpiry
from monitoring.rdap import answer_parse, base_for, bootstrap_bases, registrable_domain
from monitoring.services.domains import domains_refresh
from monitoring.services.monitors import monitor_add
from monitoring.services.trust import REFUSED

from .test_alerts_certs_content import make_certs

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def rdap_domain(name: str, expires: datetime) -> dict:
    return {
        "objectClassName": "domain", "ldhName": name,
        "events": [{"eventAction": "registration", "eventDate": "2001-01-01T00:00:00Z"},
                   {"eventAction": "expiration", "eventDate": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}],
        "entities": [{"roles": ["registrar"], "vcardArray": ["vcard", [["version", {}, "text", "4.0"],
                                                                      ["fn", {}, "text", "Example Registrar"]]]}],
    }  # fmt: skip


@contextmanager
def rdap_stub(certs, answers: dict[str, dict]) -> Iterator[tuple[str, list[str]]]:
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            asked.append(self.path)
            name = self.path.rsplit("/", 1)[-1]
            body = json.dumps(answers[name]).encode() if name in answers else b'{"errorCode": 404}'
            self.send_response(200 if name in answers else 404)
            self.send_header("Content-Type", "application/rdap+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs["soon"], certs["key"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/rdap", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    out = make_certs(tmp_path_factory.mktemp("certs"))
    time.sleep(1.1)
    return out


@pytest.fixture
def trust_test_ca(certs, monkeypatch):
    import crawler.http

    monkeypatch.setattr(crawler.http, "_CA", str(certs["ca"]))  # as certifi's CAs are trusted


# --------------------------------------------------------------------------------------------------
# The pure part


def test_registrable_domains_bootstrap_and_answers():
    assert registrable_domain("www.cs.uni.ac.kr") == "uni.ac.kr"
    assert registrable_domain("WWW.Example.ORG.") == "example.org"
    assert registrable_domain("127.0.0.1") is None and registrable_domain("::1") is None
    bases = bootstrap_bases(
        {"services": [[["kr", "ac.kr"], ["http://x/", "https://rdap.kr/"]], [["org"], ["http://o/"]]]}
    )
    assert bases == {"kr": "https://rdap.kr/", "ac.kr": "https://rdap.kr/"}  # http-only services are left out
    assert base_for("uni.ac.kr", bases) == "https://rdap.kr/" and base_for("example.org", bases) is None
    expires = datetime(2027, 5, 1, tzinfo=UTC)
    answer = answer_parse("uni.ac.kr", json.dumps(rdap_domain("uni.ac.kr", expires)).encode())
    assert (answer.expires_at, answer.registrar, answer.error) == (expires, "Example Registrar", "")
    assert answer_parse("x.org", b"<html>").error == "the registry's answer is not JSON"
    assert answer_parse("x.org", b'{"events": []}').error == "the registry gives no expiration date"


# --------------------------------------------------------------------------------------------------
# Against the stub


@pytest.mark.usefixtures("trust_test_ca")
def test_expiry_known_cached_told_at_a_threshold_and_unknown_when_unreachable(db, certs, capsys):
    now = datetime.now(UTC)
    answers = {"uni-test.org": rdap_domain("uni-test.org", now + timedelta(days=5)),
               "other-test.net": rdap_domain("other-test.net", now + timedelta(days=100))}  # fmt: skip
    web = monitor_add(kind="http", target="https://www.uni-test.org/").monitor
    dns = monitor_add(kind="dns", target="uni-test.org").monitor
    monitor_add(kind="tcp", target="db.other-test.net:5432")
    monitor_add(kind="tcp", target="gone-test.org:22")
    monitor_add(kind="tcp", target="127.0.0.1:22")  # an address: no domain
    monitor_add(kind="heartbeat", target="backup.uni-test.org job", every_s=60)  # not a host
    channel_add(name="domains", url="json://127.0.0.1:9/", events="domain")
    with (
        rdap_stub(certs, answers) as (base, asked),
        override_settings(
            MONITOR_RDAP_BASE_URL=base, CRAWL_ALLOW_PRIVATE=("127.0.0.0/8",), ALERTS_DOMAIN_DAYS=(30, 7, 1)
        ),
    ):
        rows = {d.domain: d for d in domains_refresh()}
        assert sorted(asked) == [
            "/rdap/domain/gone-test.org",
            "/rdap/domain/other-test.net",
            "/rdap/domain/uni-test.org",
        ]
        domains_refresh()  # within the day: the answers are kept, nobody is asked again
        assert len(asked) == 3
    assert set(rows) == {"uni-test.org", "other-test.net", "gone-test.org"}
    assert rows["uni-test.org"].error == "" and rows["uni-test.org"].registrar == "Example Registrar"
    assert rows["gone-test.org"].error == "the registry does not know this domain"
    events = {(e.server_id, e.kind): e.reason for e in Event.objects.all()}
    assert set(events) == {(web.server_id, "domain"), (dns.server_id, "domain")}  # 5 days: below 7; 100 days: none
    assert events[(web.server_id, "domain")].startswith("domain uni-test.org expires in 5 days (")

    # The stub is gone: asked again (--force), every expiry is unknown, what was known is kept, nothing told.
    with override_settings(MONITOR_RDAP_BASE_URL=base, CRAWL_ALLOW_PRIVATE=("127.0.0.0/8",)):
        call_command("check_domains", "--force")
    out = capsys.readouterr().out
    assert "uni-test.org" in out and "unknown: registry unreachable" in out
    kept = DomainExpiry.objects.get(domain="uni-test.org")
    assert kept.error.startswith("registry unreachable") and kept.expires_at == rows["uni-test.org"].expires_at
    assert Event.objects.count() == 2


@pytest.mark.usefixtures("trust_test_ca")
def test_registry_on_a_private_address_is_refused_unasked(db, certs):
    monitor_add(kind="http", target="https://www.uni-test.org/")
    answers = {"uni-test.org": rdap_domain("uni-test.org", datetime.now(UTC) + timedelta(days=5))}
    with (
        rdap_stub(certs, answers) as (base, asked),
        override_settings(MONITOR_RDAP_BASE_URL=base, CRAWL_ALLOW_PRIVATE=()),
    ):
        (row,) = domains_refresh()
    assert asked == [] and row.error == f"registry unreachable: {REFUSED}" and row.expires_at is None
