"""Receivers for the alerts tests and benchmark, loopback only, started and stopped by their user: an HTTP receiver for
`json://` webhooks (answers from a script of statuses, optionally slowly), one that trickles its answer a byte
a second, and a real SMTP server (aiosmtpd).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from testweb.ports import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict
    status: int  # what the receiver answered


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: WebhookReceiver

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        self.server.arrive()
        if self.server.delay_s:
            time.sleep(self.server.delay_s)
        status = self.server.answer(self.path, {k: v for k, v in self.headers.items()}, raw)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


class WebhookReceiver(ThreadingHTTPServer):
    """Records every POST; answers with the next status of `script` (the last one repeats)."""

    daemon_threads = True

    def __init__(self, script: list[int] | None = None, delay_s: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = list(script or [200])
        self.delay_s = delay_s
        self.received: list[Received] = []
        self.arrived = 0  # requests read, answered or not yet
        self._lock = threading.Lock()

    def arrive(self) -> None:
        with self._lock:
            self.arrived += 1

    def wait_arrived(self, n: int, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.arrived >= n:
                return True
            time.sleep(0.02)
        return False

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> int:
        with self._lock:
            n = len(self.received)
            status = self.script[min(n, len(self.script) - 1)]
            self.received.append(Received(path, headers, json.loads(raw or b"{}"), status))
            return status

    @property
    def base(self) -> str:
        host, port = self.server_address[:2]
        return f"json://{host}:{port}"

    def ok(self) -> list[Received]:
        return [r for r in self.received if r.status < 300]

    def wait_for(self, n: int, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.received) >= n:
                return True
            time.sleep(0.02)
        return False


@contextmanager
def webhook_receiver(script: list[int] | None = None, delay_s: float = 0.0) -> Iterator[WebhookReceiver]:
    server = WebhookReceiver(script, delay_s)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _hung_up(conn: socket.socket, wait: float) -> bool:
    """Whether the sender closed its end within `wait` seconds. Seen at once, not at the next byte written
    (the first write after a close still succeeds): the time an answer ended is when the sender let go."""
    readable, _, _ = select.select([conn], [], [], wait)
    if not readable:
        return False
    try:
        if conn.recv(1, socket.MSG_PEEK) == b"":
            return True
    except OSError:
        return True
    time.sleep(wait)  # it sent something instead (it never does): keep the pace
    return False


class _TrickleHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: TricklingReceiver

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        rx = self.server
        rx.started(self.path, dict(self.headers.items()), raw)
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(rx.length))
            self.end_headers()
            self.wfile.flush()
            for _ in range(rx.length):  # one byte every `interval`, until the sender gives up or we stop
                if rx.stopping.is_set() or _hung_up(self.connection, rx.interval):
                    break
                self.wfile.write(b"x")
                self.wfile.flush()
        except OSError:  # the sender hung up: what a deadline does
            pass
        finally:
            rx.ended()
            self.close_connection = True


class TricklingReceiver(ThreadingHTTPServer):
    """A webhook receiver that answers 200 with a long Content-Length and then one byte a second: every
    read gets a byte well within any socket timeout, so only a deadline on the whole delivery ends it.
    `active` counts the answers still trickling; `hung_up` how many a sender broke off."""

    daemon_threads = True

    def __init__(self, length: int = 100_000, interval: float = 1.0) -> None:
        super().__init__(("127.0.0.1", 0), _TrickleHandler)
        self.length, self.interval = length, interval
        self.received: list[Received] = []
        self.active = 0
        self.ended_count = 0
        self.starts: list[float] = []  # time.monotonic() of each request, and of the end of each answer
        self.ends: list[float] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    def started(self, path: str, headers: dict[str, str], raw: bytes) -> None:
        with self._lock:
            self.received.append(Received(path, headers, json.loads(raw or b"{}"), 200))
            self.starts.append(time.monotonic())
            self.active += 1

    def ended(self) -> None:
        with self._lock:
            self.active -= 1
            self.ended_count += 1
            self.ends.append(time.monotonic())

    @property
    def base(self) -> str:
        host, port = self.server_address[:2]
        return f"json://{host}:{port}"

    def wait_for(self, n: int, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.received) >= n:
                return True
            time.sleep(0.02)
        return False

    def wait_ended(self, n: int, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ended_count >= n:
                return True
            time.sleep(0.02)
        return False


@contextmanager
def trickling_receiver(length: int = 100_000, interval: float = 1.0) -> Iterator[TricklingReceiver]:
    server = TricklingReceiver(length, interval)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@dataclass
class Mailbox:
    host: str
    port: int
    messages: list[Message] = field(default_factory=list)

    async def handle_DATA(self, server, session, envelope) -> str:  # aiosmtpd handler hook
        self.messages.append(message_from_bytes(envelope.original_content or envelope.content))
        return "250 OK"


@contextmanager
def smtp_server() -> Iterator[Mailbox]:
    """A real SMTP server (aiosmtpd) on a free loopback port, in its own thread."""
    from aiosmtpd.controller import Controller

    box = Mailbox("127.0.0.1", free_port())
    controller = Controller(box, hostname=box.host, port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()
