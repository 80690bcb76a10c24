"""An embedded crawl of a web that answers with poison — robots.txt and page redirects toward an
address outside CRAWL_ALLOW_PRIVATE, NUL bytes in header values and in the status line, a Content-Length
beyond any integer column, a UTF-16 robots.txt — ends by itself, contacts no forbidden address,
classifies every URL and requests none of them more than 3 times.

The web is raw sockets (no HTTP library would send these bytes). Its two sites are crawl seeds, so they
are trusted; the sentinel, one address further, is not: trust belongs to the host an operator named,
not to a visit, so a redirect from a trusted site to the sentinel must be refused like any other.
"""

from __future__ import annotations

import socket
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field

import pytest

from testweb.ports import free_port

from .crawlcheck import clean_env, run_crawl

SITE_A, SITE_B, SENTINEL = "127.0.0.61", "127.0.0.62", "127.0.0.70"
ALLOWED = "127.0.0.60/30"  # .60-.63: the sites; the sentinel is outside
MAX_REQUESTS_PER_URL = 3


def _response(status: bytes, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    head = b"HTTP/1.1 " + status + b"\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in headers)
    return head + b"Connection: close\r\n\r\n" + body


def _html(*links: str) -> bytes:
    return ("<html><body>" + "".join(f'<a href="{u}">{u}</a>' for u in links) + "</body></html>").encode()


@dataclass
class RawServer:
    ip: str
    routes: dict[str, bytes]
    port: int = 0
    hits: Counter = field(default_factory=Counter)
    connections: int = 0

    def start(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((self.ip, self.port))
        self.port = self.sock.getsockname()[1]
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop_event.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while b"\r\n\r\n" not in data and len(data) < 65536:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except OSError:
                    continue
                parts = data.split(b" ", 2)
                path = parts[1].decode("latin-1") if len(parts) > 1 else ""
                self.hits[path] += 1
                payload = self.routes.get(path, _response(b"404 Not Found", [(b"Content-Length", b"0")], b""))
                try:
                    conn.sendall(payload)
                except OSError:
                    pass

    def stop(self) -> None:
        self.stop_event.set()
        self.sock.close()
        self.thread.join(5)


def _web(port: int) -> tuple[RawServer, RawServer, RawServer]:
    forbidden = f"http://{SENTINEL}:{port}/latest/meta-data/".encode()
    html = [(b"Content-Type", b"text/html")]
    site_a = {
        "/robots.txt": _response(b"302 Found", [(b"Location", forbidden), (b"Content-Length", b"0")], b""),
        "/": _response(
            b"200 OK",
            html,
            _html("/nul-header", "/nul-status", "/huge-length", "/to-sentinel", "/utf8-ok"),
        ),
        "/nul-header": _response(b"200 OK", [*html, (b"ETag", b'"a\x00b"'), (b"X-Note", b"x\x00\x01y")], _html("/")),
        "/nul-status": _response(b"200 O\x00K", html, _html("/")),
        "/huge-length": _response(b"200 OK", [*html, (b"Content-Length", b"18446744073709551616")], _html("/")),
        "/to-sentinel": _response(b"301 Moved", [(b"Location", forbidden), (b"Content-Length", b"0")], b""),
        "/utf8-ok": _response(b"200 OK", [*html, (b"Last-Modified", b"Wed, 21 Oct 2015 07:28:00 GMT\x00")], b"ok"),
    }
    utf16_robots = "User-agent: *\nDisallow: /private\n".encode("utf-16")
    site_b = {
        "/robots.txt": _response(b"200 OK", [(b"Content-Type", b"text/plain")], utf16_robots),
        "/": _response(b"200 OK", html, _html("/private/secret", "/public")),
        "/public": _response(b"200 OK", html, _html("/")),
        "/private/secret": _response(b"200 OK", html, b"must never be fetched"),
    }
    servers = (RawServer(SITE_A, site_a, port), RawServer(SITE_B, site_b, port), RawServer(SENTINEL, {}, port))
    return servers


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    data = tmp_path_factory.mktemp("poison")
    port = free_port(SITE_A)
    servers = _web(port)
    for s in servers:
        s.start()
    try:
        env = clean_env(
            CRAWLADMIN_DATA_DIR=str(data),
            CRAWL_ALLOW_PRIVATE=ALLOWED,
            CRAWL_CONNECT_TIMEOUT="1",
            CRAWL_HEADER_TIMEOUT="1",
            CRAWL_BODY_TIMEOUT="2",
            CRAWL_SCOPE="any",
        )
        summary = run_crawl(env, f"http://{SITE_A}:{port}/", f"http://{SITE_B}:{port}/", timeout=180)
        con = sqlite3.connect(data / "crawladmin.sqlite3")
        try:
            rows = {
                url: (state, reason, failure)
                for url, state, reason, failure in con.execute(
                    "SELECT url, state, exclusion_reason, failure_kind FROM crawladmin_url"
                )
            }
            robots = dict(con.execute("SELECT host, robots_txt FROM crawladmin_server"))
        finally:
            con.close()
    finally:
        for s in servers:
            s.stop()
    yield summary, rows, robots, servers, port


def test_the_crawl_ends_by_itself(crawl):
    summary, *_ = crawl
    assert summary["stopped"] == "done", summary


def test_no_forbidden_address_is_contacted_not_even_through_a_trusted_sites_redirects(crawl):
    _, _, robots, (_, _, sentinel), _ = crawl
    assert sentinel.connections == 0
    assert "meta-data" not in robots.get(SITE_A, "")


def test_every_url_is_classified_and_none_left_to_load(crawl):
    _, rows, *_ = crawl
    assert rows
    for url, (state, reason, failure) in rows.items():
        assert state in {"visited", "noresponse1", "noresponse2", "dead"} or reason, (url, state, failure)


def test_no_url_is_requested_more_than_three_times(crawl):
    _, _, _, (site_a, site_b, _), _ = crawl
    for server in (site_a, site_b):
        worst = server.hits.most_common(1)
        assert worst and worst[0][1] <= MAX_REQUESTS_PER_URL, (server.ip, server.hits)


def test_poisoned_pages_are_stored_and_visited(crawl):
    _, rows, _, _, port = crawl
    for path in ("/nul-header", "/utf8-ok"):
        state, _, _ = rows[f"http://{SITE_A}:{port}{path}"]
        assert state == "visited", (path, rows[f"http://{SITE_A}:{port}{path}"])


def test_a_utf16_robots_txt_is_obeyed(crawl):
    _, rows, robots, (_, site_b, _), port = crawl
    assert site_b.hits["/private/secret"] == 0
    assert rows[f"http://{SITE_B}:{port}/private/secret"][1] == "robots.txt"
    assert "\x00" not in robots[SITE_B] and "Disallow: /private" in robots[SITE_B]
