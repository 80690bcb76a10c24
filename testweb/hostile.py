"""A hostile web on loopback: servers that lie, flood, trickle, trap and never answer.

Raw sockets, not http.server: most of the cases below are responses a well-behaved HTTP library
refuses to produce (floods of headers, wrong Content-Length, bodies that never end). One thread per
connection; every request is logged with when it started and when the client went away, so a test
can prove each slow request ended by the crawler's own deadline, and how often each URL was asked for.

Servers (each on its own IP and ephemeral port):
  main         the hostile site itself (see CASES); robots.txt disallows /private/
  robots_500   robots.txt answers 500 (RFC 9309: the whole server counts as unreachable for a while)
  robots_big   robots.txt of 2.4 MB, no Content-Length: cut at the body limit, its first 500 KiB parsed
  robots_huge  robots.txt declaring 60 MB: never read, so the whole server counts as disallowed
  robots_slow  robots.txt never answers (header timeout)
"""

from __future__ import annotations

import random
import select
import socket
import threading
import time
import zlib
from dataclasses import dataclass
from functools import cache

TRICKLE_CAP = 60.0  # seconds a trickling/silent handler goes on at most, whatever the client does
SIXTY_MB = 60 * 1024 * 1024
BOMB_BYTES = 256 * 1024 * 1024  # decompressed size of the gzip bomb (~250 KB on the wire)
DISALLOWED = "/private/"


@dataclass
class Hit:
    host: str  # server IP
    method: str
    target: str  # request target as sent
    started: float  # monotonic, request line read
    ended: float  # monotonic, response done or client gone
    sent: int  # bytes written (headers + body)


# --------------------------------------------------------------------------------------------------
# Responses


def _head(status: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _html(body: str | bytes, *, ctype: str = "text/html; charset=utf-8", status: str = "200 OK") -> bytes:
    data = body.encode("utf-8") if isinstance(body, str) else body
    return _head(status, [("Content-Type", ctype), ("Content-Length", str(len(data))), ("Connection", "close")]) + data


def _redirect(location: str) -> bytes:
    return _head("302 Found", [("Location", location), ("Content-Length", "0"), ("Connection", "close")])


@cache
def _bomb() -> bytes:
    """BOMB_BYTES of zeros, gzipped: built once, incrementally (never all of it in memory)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: gzip container
    block = b"\0" * (1024 * 1024)
    parts = [z.compress(block) for _ in range(BOMB_BYTES // len(block))]
    parts.append(z.flush())
    return b"".join(parts)


def _page(title: str, links: list[str], extra: str = "") -> str:
    anchors = "".join(f'<a href="{h}">l</a>\n' for h in links)
    return f"<!doctype html><html><head><title>{title}</title></head><body>{extra}{anchors}</body></html>"


# Every case on the main server: path -> what the crawler should make of it.  "visited" rows may carry a
# failure_kind (a cut body is still a response); a NoResponse1 row must carry this failure_kind.
CASES: dict[str, tuple[str, str]] = {
    "/malformed": ("visited", ""),
    "/binary-html": ("visited", ""),
    "/deep-nesting": ("visited", "parse:nesting"),  # past libxml2's 256 levels: classified, parsed up to them
    "/huge-declared": ("visited", "too_large"),  # Content-Length: 60 MB, body never read
    "/huge-stream": ("visited", "too_large"),  # 60 MB, no Content-Length: cut at the limit
    "/gzip-bomb": ("visited", "too_large"),  # 256 MB after decompression
    "/bad-gzip": ("noresponse1", "bad_response"),  # Content-Encoding: gzip over garbage
    "/trickle": ("noresponse1", "body_timeout"),  # headers, then a byte a second
    "/trickle-headers": ("noresponse1", "header_timeout"),  # the status line a byte a second
    "/never": ("noresponse1", "header_timeout"),  # accepts, reads the request, never answers
    "/header-flood": ("noresponse1", "bad_response"),  # 150 headers
    "/header-huge": ("noresponse1", "bad_response"),  # 90 headers of 1 KB each (> 64 KB)
    "/header-line": ("noresponse1", "bad_response"),  # one header line of 100 KB
    "/garbage-status": ("noresponse1", "bad_response"),  # not HTTP at all
    "/short-body": ("noresponse1", "reset"),  # Content-Length promises more than is sent
    "/charset-bogus": ("visited", ""),
    "/charset-wrong": ("visited", ""),
    "/charset-utf16-lie": ("visited", ""),
    "/ctype-image-html": ("visited", ""),  # says image/png, is HTML: stored, not parsed
    "/ctype-html-png": ("visited", ""),  # says text/html, is a PNG
    "/odd-links": ("visited", ""),
    "/many-links": ("visited", ""),
    "/redir/loop/a": ("visited", ""),
    "/redir/loop/b": ("visited", ""),
    "/redir/self": ("visited", ""),
    "/redir/n/1": ("visited", ""),
    "/cal/2024/1": ("visited", ""),
    "/deep/x/": ("visited", ""),
    "/sess?sid=0": ("visited", ""),
}

MANY_LINKS = 5000


class HostileWeb:
    """Five raw HTTP servers on 127.0.0.<first> .. <first+4>; start() / stop(), or a context manager."""

    __test__ = False

    def __init__(self, first: int = 240) -> None:
        self.names = ("main", "robots_500", "robots_big", "robots_huge", "robots_slow")
        self.ips = {name: f"127.0.0.{first + i}" for i, name in enumerate(self.names)}
        self.ports: dict[str, int] = {}
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._rng = random.Random(8)

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> HostileWeb:
        _bomb()  # build before the crawl starts, not inside its timing
        for name in self.names:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.ips[name], 0))
            sock.listen(64)
            sock.settimeout(0.2)
            self._socks.append(sock)
            self.ports[name] = sock.getsockname()[1]
            t = threading.Thread(target=self._accept, args=(name, sock), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(5)
        for s in self._socks:
            s.close()

    def __enter__(self) -> HostileWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def origin(self, name: str = "main") -> str:
        return f"http://{self.ips[name]}:{self.ports[name]}"

    def seeds(self) -> list[str]:
        return [self.origin(n) + "/" for n in self.names]

    def url(self, path: str, name: str = "main") -> str:
        return self.origin(name) + path

    # -- serving ------------------------------------------------------------------------------------
    def _accept(self, name: str, sock: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(name, conn), daemon=True).start()

    def _serve(self, name: str, conn: socket.socket) -> None:
        conn.settimeout(10)
        hit: Hit | None = None
        try:
            request = self._read_request(conn)
            if request is None:
                return
            method, target = request
            hit = Hit(self.ips[name], method, target, time.monotonic(), 0.0, 0)
            hit.sent = self._respond(name, conn, target)
        except OSError:
            pass  # the crawler hung up on us: that is the point of most cases
        finally:
            if hit is not None:
                hit.ended = time.monotonic()
                with self._lock:
                    self.hits.append(hit)
            conn.close()

    @staticmethod
    def _read_request(conn: socket.socket) -> tuple[str, str] | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk or len(data) > 1 << 20:
                return None
            data += chunk
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        return (parts[0], parts[1]) if len(parts) >= 2 else None

    def _client_gone(self, conn: socket.socket, wait: float) -> bool:
        """Wait up to `wait` seconds; True as soon as the client closed its end."""
        readable, _, _ = select.select([conn], [], [], wait)
        if not readable:
            return False
        try:
            return conn.recv(4096) == b""
        except OSError:
            return True

    def _trickle(self, conn: socket.socket, prefix: bytes, drip: bytes) -> int:
        """Send `prefix`, then one byte of `drip` (cycled) a second until the client leaves."""
        conn.sendall(prefix)
        sent, end = len(prefix), time.monotonic() + TRICKLE_CAP
        while time.monotonic() < end and not self._stop.is_set():
            if self._client_gone(conn, 1.0):
                break
            conn.sendall(drip[sent % len(drip) : sent % len(drip) + 1])
            sent += 1
        return sent

    def _stream(self, conn: socket.socket, head: bytes, total: int) -> int:
        conn.sendall(head)
        block = (b"<p>" + b"x" * 1020 + b"</p>") * 64  # 64 KB of HTML
        sent = len(head)
        while sent - len(head) < total and not self._stop.is_set():
            conn.sendall(block)
            sent += len(block)
        return sent

    def _respond(self, name: str, conn: socket.socket, target: str) -> int:
        if name != "main":
            return self._respond_robots_variant(name, conn, target)
        path = target.split("?", 1)[0]
        special = self._special(conn, path, target)
        if special is not None:
            return special
        data = self._simple(path, target)
        conn.sendall(data)
        return len(data)

    def _respond_robots_variant(self, name: str, conn: socket.socket, target: str) -> int:
        if target == "/robots.txt":
            if name == "robots_500":
                data = _html("oops", ctype="text/plain", status="500 Internal Server Error")
            elif name == "robots_big":
                filler = "".join(f"# {i:07d} filler filler filler filler filler filler\n" for i in range(40000))
                text = "User-agent: *\nDisallow: /private/\n" + filler + "Disallow: /a\n"  # last line ignored
                head = _head("200 OK", [("Content-Type", "text/plain"), ("Connection", "close")])
                data = head + text.encode()
            elif name == "robots_huge":
                head = _head("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(SIXTY_MB))])
                return self._stream(conn, head, SIXTY_MB)
            else:
                self._client_gone(conn, TRICKLE_CAP)  # never answers
                return 0
            conn.sendall(data)
            return len(data)
        data = _html(_page(f"{name} home", ["/a", f"{DISALLOWED}x"]))
        conn.sendall(data)
        return len(data)

    def _special(self, conn: socket.socket, path: str, target: str) -> int | None:
        """The cases that need the socket, not a canned response."""
        if path == "/trickle":
            head = _head("200 OK", [("Content-Type", "text/html"), ("Content-Length", "100000")])
            return self._trickle(conn, head, b"<p>slow</p>")
        if path == "/trickle-headers":
            return self._trickle(conn, b"", b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 1000)
        if path == "/never":
            self._client_gone(conn, TRICKLE_CAP)
            return 0
        if path == "/huge-stream":
            head = _head("200 OK", [("Content-Type", "text/html"), ("Connection", "close")])
            return self._stream(conn, head, SIXTY_MB)
        if path == "/huge-declared":
            head = _head("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(SIXTY_MB))])
            return self._stream(conn, head, SIXTY_MB)
        if path == "/gzip-bomb":
            bomb = _bomb()
            head = _head(
                "200 OK",
                [("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Content-Length", str(len(bomb)))],
            )
            conn.sendall(head + bomb)
            return len(head) + len(bomb)
        if path == "/short-body":
            head = _head("200 OK", [("Content-Type", "text/html"), ("Content-Length", "5000")])
            conn.sendall(head + b"<html><title>cut")
            return len(head) + 16
        return None

    def _simple(self, path: str, target: str) -> bytes:  # noqa: C901 - a table of cases reads best flat
        o = self.origin()
        if path == "/robots.txt":
            return _html(f"User-agent: *\nDisallow: {DISALLOWED}\n", ctype="text/plain")
        if path == "/":
            case_links = [p for p in CASES if p != "/"]
            return _html(
                _page(
                    "hostile home",
                    [
                        *case_links,
                        f"{DISALLOWED}secret",
                        "http://10.0.0.1/",
                        "http://169.254.169.254/latest/meta-data/",
                    ],
                )
            )
        if path == "/malformed":
            return _html(
                b"<html><head><title>unclosed <b>bold<title>again</head><body><a href='/malformed-child'"
                b'><div><<<>>>&&&;<a href="/malformed-child2">x</a><table><tr><td></html></p></div><!--'
            )
        if path == "/binary-html":
            return _html(bytes(random.Random(1).randrange(256) for _ in range(4096)))
        if path == "/deep-nesting":
            return _html("<html><body>" + "<div>" * 20000 + "<a href='/nested-link'>n</a>" + "</div>" * 10 + "</body>")
        if path == "/bad-gzip":
            junk = b"this is not gzip at all" * 10
            head = _head(
                "200 OK",
                [
                    ("Content-Type", "text/html"),
                    ("Content-Encoding", "gzip"),
                    ("Content-Length", str(len(junk))),
                    ("Connection", "close"),
                ],
            )
            return head + junk
        if path == "/header-flood":
            return _head("200 OK", [(f"X-Flood-{i}", "v") for i in range(150)] + [("Content-Length", "0")])
        if path == "/header-huge":
            return _head("200 OK", [(f"X-Big-{i}", "v" * 1024) for i in range(90)] + [("Content-Length", "0")])
        if path == "/header-line":
            return _head("200 OK", [("X-Line", "v" * 100_000), ("Content-Length", "0")])
        if path == "/garbage-status":
            return b"SMTP READY\r\n\x00\x01\x02 not http\r\n\r\n"
        if path == "/charset-bogus":
            return _html(_page("bogus charset", ["/cs-child1"]), ctype="text/html; charset=x-no-such-charset")
        if path == "/charset-wrong":
            body = _page("caf\u00e9 \u00fcber \u65e5\u672c", ["/cs-child2"]).encode("utf-8")
            return _html(body, ctype="text/html; charset=utf-16")
        if path == "/charset-utf16-lie":
            body = '<meta charset="utf-16"><title>lie</title><a href="/cs-child3">x</a>'.encode("latin-1")
            return _html(b"\xff\xfe" + body, ctype="text/html")
        if path == "/ctype-image-html":
            return _html(_page("not an image", ["/never-followed"]), ctype="image/png")
        if path == "/ctype-html-png":
            return _html(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, ctype="text/html")
        if path == "/odd-links":
            return _html(self._odd_links())
        if path == "/many-links":
            links = [f"{DISALLOWED}m{i}" for i in range(MANY_LINKS)]
            return _html(_page("many links", links))
        if path.startswith("/redir/"):
            return self._redirects(path)
        if path.startswith("/cal/"):
            _, _, year, month = path.split("/")
            y, m = int(year), int(month)
            nxt = (y + (m == 12), m % 12 + 1)
            prv = (y - (m == 1), (m - 2) % 12 + 1)
            return _html(_page(f"calendar {y}-{m}", [f"/cal/{nxt[0]}/{nxt[1]}", f"/cal/{prv[0]}/{prv[1]}"]))
        if path.startswith("/deep/"):
            return _html(_page("deeper", [f"{path}x/", f"{path}y/"]))
        if path == "/sess":
            with self._lock:
                sid = self._rng.getrandbits(64)
            return _html(_page("session", [f"/sess?sid={sid:x}"]))
        # Whatever the odd links and traps point at: a plain page with no links.
        return _html(_page(f"leaf {o}", []))

    def _odd_links(self) -> str:
        ip, port = self.ips["main"], self.ports["main"]
        hrefs = [
            "javascript:alert(1)",
            "JaVaScRiPt:void(0)",
            "mailto:someone@example.org",
            "data:text/html,<a href=/x>x</a>",
            "tel:+1234",
            "ftp://127.0.0.1/file",
            f"//{ip}:{port}/proto-relative",
            "  /whitespace\n/inside\t/href  ",
            "/pct/%7Euser",
            "/pct/~user",
            "/pct/a%2Fb",
            "/pct/%e4%b8%ad",
            "/pct/\u4e2d",
            "/pct/%zz",
            "/pct/a b",
            "/" + "long" * 2048,  # 8 KB: too long, refused
            "http://[::1",  # unbalanced bracket
            f"http://{ip}:99999/bad-port",
            "http:///no-host",
            "#fragment-only",
            "",
            "relative-to-base",
        ]
        anchors = "".join(f'<a href="{h}">l</a>\n' for h in hrefs)
        return f'<html><head><base href="/based/"><title>odd</title></head><body>{anchors}</body></html>'

    def _redirects(self, path: str) -> bytes:
        if path == "/redir/loop/a":
            return _redirect("/redir/loop/b")
        if path == "/redir/loop/b":
            return _redirect("/redir/loop/a")
        if path == "/redir/self":
            return _redirect("/redir/self")
        if path.startswith("/redir/n/"):
            n = int(path.rsplit("/", 1)[1])
            return _redirect(f"/redir/n/{n + 1}")
        return _html(_page("?", []))
