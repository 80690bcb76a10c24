"""Servers given as IPv6 literals: crawled and monitored end to end against a small site on
[::1], and guarded like any other address (::1 is loopback: refused unless CRAWL_ALLOW_PRIVATE has it or
an operator added the server)."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .crawlcheck import clean_env, run_crawl
from .test_monitoring_commands import manage

PAGES = {
    "/": b'<html><head><title>v6 home</title></head><body><a href="/a">a</a> <a href="/b">b</a></body></html>',
    "/a": b"<html><head><title>v6 a</title></head><body>page a</body></html>",
    "/b": b'<html><head><title>v6 b</title></head><body><a href="/">home</a></body></html>',
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        pages = self.server.pages
        body = pages.get(self.path)
        self.send_response(200 if body is not None else 404)
        body = body or b"not found"
        self.send_header("Content-Type", "text/html" if self.path in pages else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True
    requests: list[str]
    pages: dict[str, bytes]


class _V4Server(_V6Server):
    address_family = socket.AF_INET


def _ipv6_loopback_works() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _ipv6_loopback_works(), reason="no IPv6 loopback here")


@contextmanager
def v6_site(host: str = "::1", pages: dict[str, bytes] = PAGES) -> Iterator[_V6Server]:
    server = (_V6Server if ":" in host else _V4Server)((host, 0), _Handler)
    server.requests, server.pages = [], pages
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _rows(db, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_site_on_an_ipv6_literal_is_crawled_whole(tmp_path):
    with v6_site() as site:
        seed = f"http://[::1]:{site.server_address[1]}/"
        env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), CRAWL_ALLOW_PRIVATE="127.0.0.0/8,::1/128")
        summary = run_crawl(env, seed, timeout=120)
    db = tmp_path / "crawladmin.sqlite3"
    states = dict(_rows(db, "SELECT url, state FROM crawladmin_url"))
    assert {states.get(seed + p.lstrip("/")) for p in PAGES} == {"visited"}, (states, summary)
    assert _rows(db, "SELECT host FROM crawladmin_server") == [("::1",)]
    assert sorted(p for p in site.requests if p in PAGES) == sorted(PAGES)  # each page once
    assert "/robots.txt" in site.requests


def test_an_ipv6_literal_is_guarded_like_any_address(tmp_path):
    """Found in a link (not a seed, not imported) and not in CRAWL_ALLOW_PRIVATE: ::1 is loopback, refused
    before any connection is made, and the URL shows why."""
    with v6_site() as site:
        target = f"http://[::1]:{site.server_address[1]}/"
        linking = {"/": f'<html><body><a href="{target}">v6</a></body></html>'.encode()}
        with v6_site("127.0.0.231", linking) as v4:
            seed = f"http://127.0.0.231:{v4.server_address[1]}/"
            env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), CRAWL_ALLOW_PRIVATE="127.0.0.0/8")
            run_crawl(env, seed, timeout=120)
    assert site.requests == []
    db = tmp_path / "crawladmin.sqlite3"
    state, reason = _rows(db, f"SELECT state, exclusion_reason FROM crawladmin_url WHERE url = '{target}'")[0]
    assert state != "visited" and reason, (state, reason)


def test_an_imported_ipv6_server_is_monitored(tmp_path):
    with v6_site() as site:
        port = site.server_address[1]
        env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path))
        assert manage(env, "migrate", "-v0").returncode == 0
        (tmp_path / "servers.csv").write_text(f"http://[::1]:{port}/,v6\n[::1]:{port + 1 if port < 65535 else 1},v6\n")
        imported = manage(env, "import_servers", "--trusted", str(tmp_path / "servers.csv"))
        assert imported.returncode == 0, imported.stderr
        proc = manage(env, "check_servers", "--json")
        assert proc.returncode == 0, proc.stderr[-3000:]
    checks = {c["server"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks[f"http://[::1]:{port}"]["category"] == "normal"
    assert checks[f"http://[::1]:{port}"]["status_code"] == 200
    assert site.requests == ["/"]
