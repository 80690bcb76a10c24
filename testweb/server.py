"""Serve a :class:`~testweb.site.Web` on several loopback IPs, one port.

One ``ThreadingHTTPServer`` per normal/slow IP plus a "silent" listener that
accepts connections and never sends a byte.  Every answered request (also one
whose client hung up before the answer reached it) is kept in an in-memory
access log (and optionally appended to a file) so tests can prove what the
crawler did and did not fetch.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TextIO

from .site import SiteSpec, Web

_BIND_ATTEMPTS = 8


@dataclass
class AccessRecord:
    time: float
    client: str
    host: str  # the IP of the server that answered
    method: str
    path: str  # request target as sent (path + query)
    status: int
    bytes: int  # body bytes sent (0 for HEAD / 304)
    user_agent: str
    started: float = 0.0  # when the request line arrived (`time` is when the answer was sent)
    delivered: bool = True  # False: not (yet) written whole; the client may have gone before it was


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so requests.Session can keep connections alive; every response
    # carries Content-Length, which keep-alive needs.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, the body
    # waits for the client's delayed ACK (~40 ms per request on Linux).
    disable_nagle_algorithm = True
    server: _SiteHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # quiet: the access log replaces stderr logging

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()

    # Other methods get a proper 405 instead of http.server's 501.
    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    def _answer(self) -> None:
        started = time.time()
        self._drain_body()
        site = self.server.site
        if self.server.host in site.down_hosts:
            # "Stopped answering": the connection closes with no response at all.
            self.close_connection = True
            return
        delay = site.web.delay(self.server.host)
        if delay and site.stopping.wait(delay):
            self.close_connection = True
            return  # shutting down: drop the request rather than hold stop()
        status, headers, body = site.web.response(self.server.host, self.path, self.command, dict(self.headers.items()))
        # Logged before the answer goes out, so a client never sees an answer its log does not show yet; and
        # logged even when the client vanishes before the answer reaches it (a crawler killed mid-request):
        # the server did receive the request, and the crawler's record must show it too.
        rec = AccessRecord(
            time=time.time(),
            client=self.client_address[0],
            host=self.server.host,
            method=self.command,
            path=self.path,
            status=status,
            bytes=len(body),
            user_agent=self.headers.get("User-Agent", ""),
            started=started,
            delivered=False,
        )
        site.record(rec)
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if body:
                self.wfile.write(body)
            rec.delivered = True
        finally:
            rec.time = time.time()

    def _drain_body(self) -> None:
        # An unread request body would be parsed as the next request on a
        # kept-alive connection.
        length = int(self.headers.get("Content-Length") or 0)
        if length > 0:
            self.rfile.read(length)


class _SiteHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, site: TestWebServer) -> None:
        self.host = host
        self.site = site
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__((host, port), _Handler)

    def track(self, conn: socket.socket, alive: bool) -> None:
        with self._conns_lock:
            (self._conns.add if alive else self._conns.discard)(conn)

    def close_connections(self) -> None:
        # Keep-alive handler threads block in readline(); shutting their
        # sockets down wakes them so server_close() can join them quickly.
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            _quiet(lambda conn=conn: conn.shutdown(socket.SHUT_RDWR))

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients hanging up mid-response are normal for a crawler's test web


class _SilentServer:
    """Accepts TCP connections and holds them open without ever answering."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((host, port))
            self.sock.listen(64)
            # Timeout instead of a blocking accept(): the thread polls the
            # stop flag, so stop() never depends on waking a blocked accept.
            self.sock.settimeout(0.1)
        except OSError:
            self.sock.close()
            raise
        self.held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"testweb-silent-{host}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.held.append(conn)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.sock.close()
        for conn in self.held:
            _quiet(conn.close)
        self.held.clear()


class TestWebServer:
    """All servers of one test web.  Use as a context manager or start()/stop()."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, spec: SiteSpec | None = None, *, port: int = 0, log_path: str | None = None) -> None:
        self.spec = spec or SiteSpec()
        self._requested_port = port
        self._port = port
        self._web: Web | None = None
        self._log_path = log_path
        self._log_file: TextIO | None = None
        self._records: list[AccessRecord] = []
        self._records_lock = threading.Lock()
        self._http: list[_SiteHTTPServer] = []
        self._threads: list[threading.Thread] = []
        self._silent: _SilentServer | None = None
        self.stopping = threading.Event()
        self._started = False
        self.down_hosts: set[str] = set()  # hosts that currently drop every request unanswered

    # -------------------------------------------------------------- lifecycle
    def start(self) -> TestWebServer:
        if self._started:
            return self
        self.stopping.clear()
        self._bind_all()
        if self._log_path:
            self._log_file = open(self._log_path, "a", encoding="utf-8")
        for srv in self._http:
            t = threading.Thread(
                target=srv.serve_forever, kwargs={"poll_interval": 0.05}, name=f"testweb-{srv.host}", daemon=True
            )
            t.start()
            self._threads.append(t)
        if self._silent:
            self._silent.start()
        self._started = True
        return self

    def _bind_all(self) -> None:
        """Bind every IP on one port; with port 0, retry if another IP's port is taken."""
        last_error: OSError | None = None
        attempts = 1 if self._requested_port else _BIND_ATTEMPTS
        for _ in range(attempts):
            try:
                self._try_bind(self._requested_port)
                return
            except OSError as exc:
                last_error = exc
                self._close_sockets()
                if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                    break
        raise OSError(f"testweb: could not bind all servers: {last_error}") from last_error

    def _try_bind(self, port: int) -> None:
        web = Web(self.spec, port or 1)  # hosts() doesn't depend on the port
        hosts = web.hosts()
        for host in hosts:
            if web.is_silent(host):
                self._silent = _SilentServer(host, port)
            else:
                srv = _SiteHTTPServer(host, port, self)
                self._http.append(srv)
            if port == 0:
                # The first bind picks the port; the others must share it.
                port = self._http[0].server_address[1] if self._http else self._silent.sock.getsockname()[1]  # type: ignore[union-attr]
        self._port = port
        self._web = Web(self.spec, port)

    def _close_sockets(self) -> None:
        for srv in self._http:
            srv.server_close()
        self._http.clear()
        if self._silent:
            self._silent.stop()
            self._silent = None

    def stop(self) -> None:
        """Shut everything down; safe to call more than once."""
        if not self._started:
            return
        self._started = False
        self.stopping.set()  # wakes slow-server handlers sleeping on it
        for srv in self._http:
            srv.shutdown()  # stop serve_forever loops
        for srv in self._http:
            srv.close_connections()  # wake keep-alive handler threads
            srv.server_close()  # close listener, join handler threads
        for t in self._threads:
            t.join()
        self._threads.clear()
        self._http.clear()
        if self._silent:
            self._silent.stop()
            self._silent = None
        if self._log_file:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> TestWebServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -------------------------------------------------------------- accessors
    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("port is chosen by start()")
        return self._port

    @property
    def web(self) -> Web:
        if self._web is None:
            if not self._port:
                raise RuntimeError("the web depends on the port; call start() first")
            self._web = Web(self.spec, self._port)
        return self._web

    def seeds(self) -> list[str]:
        return self.web.seeds()

    def change(self, url: str) -> None:
        self.web.change(url)

    def set_down(self, host: str, down: bool = True) -> None:
        """Make a server stop answering (connections close without a response), or answer again."""
        if host not in self.web.hosts():
            raise ValueError(f"{host} is not a server of this web")
        (self.down_hosts.add if down else self.down_hosts.discard)(host)

    # ------------------------------------------------------------- access log
    def record(self, rec: AccessRecord) -> None:
        with self._records_lock:
            self._records.append(rec)
            if self._log_file:
                self._log_file.write(_log_line(rec, self._port))
                self._log_file.flush()

    def access_log(self) -> list[AccessRecord]:
        with self._records_lock:
            return list(self._records)

    def requests_for(self, url_prefix: str) -> list[AccessRecord]:
        """Records whose absolute URL ``http://host:port/path?query`` starts with the prefix."""
        return [r for r in self.access_log() if self.url_of(r).startswith(url_prefix)]

    def url_of(self, rec: AccessRecord) -> str:
        return f"http://{rec.host}:{self._port}{rec.path}"


def _log_line(rec: AccessRecord, port: int) -> str:
    """Combined-log-like line, with the virtual host:port appended."""
    when = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(rec.time))
    ua = rec.user_agent.replace('"', "'")
    return (
        f'{rec.client} - - [{when}] "{rec.method} {rec.path} HTTP/1.1" '
        f'{rec.status} {rec.bytes} "-" "{ua}" {rec.host}:{port}\n'
    )


def _quiet(fn: Callable[[], object]) -> None:
    try:
        fn()
    except OSError:
        pass
