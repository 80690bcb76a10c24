"""Benchmark: 1,000 monitored servers on a local web, 300 of them go down at once. Prints the time
from the confirming checks to the last delivered message, the messages each channel received (grouped), and
whether any event was lost. A benchmark, not a test.

    python -m bench.alerts_outage                 # 1,000 servers, 300 down
    python -m bench.alerts_outage --servers 200 --down 60 --json

The web: one listening socket per server (127.0.1.0 onwards, one port), answered by a single selector loop
with a fixed 200 page; a server "goes down" when its socket is closed (connections are then refused). The
database is a fresh embedded SQLite file in a temporary directory. Channels: four json:// webhooks to a
local receiver (all servers; groups g0 and g1; one server) and one plain e-mail channel to a local SMTP
server (aiosmtpd). Checks run as `check_servers` runs them (monitors_check in this process, MONITOR_THREADS
in flight); the sender runs as beat runs it (send_notifications), with ALERTS_GROUP_WINDOW as given.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUPS = 10


class LocalWeb:
    """Many tiny HTTP servers on one thread: each accepted connection gets one fixed 200 answer."""

    ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"

    def __init__(self, n: int) -> None:
        self.sel = selectors.DefaultSelector()
        self.listeners: list[socket.socket] = []
        self.port = 0
        for i in range(n):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.host(i), self.port))
            self.port = s.getsockname()[1]
            s.listen(64)
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, "listen")
            self.listeners.append(s)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def host(i: int) -> str:
        return f"127.0.{1 + i // 250}.{i % 250 + 1}"

    def url(self, i: int) -> str:
        return f"http://{self.host(i)}:{self.port}/"

    def take_down(self, indexes: list[int]) -> None:
        with self._lock:
            for i in indexes:
                self.sel.unregister(self.listeners[i])
                self.listeners[i].close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                events = self.sel.select(timeout=0.05)
                for key, _ in events:
                    sock = key.fileobj
                    if key.data == "listen":
                        try:
                            conn, _ = sock.accept()
                        except OSError:
                            continue
                        conn.setblocking(False)
                        self.sel.register(conn, selectors.EVENT_READ, "conn")
                    else:
                        try:
                            data = sock.recv(65536)
                            if data:
                                sock.sendall(self.ANSWER)
                        except OSError:
                            pass
                        self.sel.unregister(sock)
                        sock.close()

    def __enter__(self) -> LocalWeb:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(5)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--down", type=int, default=300)
    parser.add_argument("--window", type=float, default=0.0, help="ALERTS_GROUP_WINDOW for the run (s)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    data = tempfile.mkdtemp(prefix="bench-alerts-")
    os.environ.update(
        CRAWLADMIN_DATA_DIR=data,
        ALERTS_GROUP_WINDOW=str(args.window),
        ALERTS_ALLOW_PRIVATE="127.0.0.0/8",  # the receivers listen on loopback
        MONITOR_FAIL_AFTER="2",
        CRAWL_CONNECT_TIMEOUT="2",
        CRAWL_HEADER_TIMEOUT="2",
        MONITOR_THREADS="64",
        EMAIL_HOST="127.0.0.1",
    )
    for name in list(os.environ):
        if name.startswith(("DATABASE_URL", "CELERY_")):
            del os.environ[name]
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")
    from testweb.alerts import smtp_server, webhook_receiver

    with LocalWeb(args.servers) as web, webhook_receiver() as rx, smtp_server() as box:
        os.environ["EMAIL_PORT"] = str(box.port)
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        from alerts.models import Notification
        from alerts.services.channels import channel_add
        from alerts.services.send import notifications_send
        from monitoring.server_list import parse_server_row
        from monitoring.services.checks import monitors_check
        from monitoring.services.servers import servers_import

        rows = []
        for i in range(args.servers):
            row = parse_server_row([web.url(i), f"g{i % GROUPS}"])
            rows.append(row)
        ids = servers_import(trusted=True, rows=rows).server_ids
        channel_add(name="ops", url=f"{rx.base}/ops", events="down,up")
        channel_add(name="g0", url=f"{rx.base}/g0", group="g0", events="down")
        channel_add(name="g1", url=f"{rx.base}/g1", group="g1", events="down")
        channel_add(name="one", url=f"{rx.base}/one", server_host=LocalWeb.host(0), events="down")
        channel_add(name="mail", url="noc@example.org", events="down")

        t = time.perf_counter()
        first = monitors_check(server_ids=ids, claim=False)
        round_s = time.perf_counter() - t
        assert all(c.category == "normal" for c in first), Counter(c.category for c in first)
        step = max(1, args.servers // args.down)
        down = list(range(0, args.servers, step))[: args.down]
        web.take_down(down)
        monitors_check(server_ids=ids, claim=False)  # first failure: nothing confirmed yet
        t_check = time.perf_counter()
        confirming = monitors_check(server_ids=ids, claim=False)
        t_confirmed = time.perf_counter()
        changed = sum(1 for c in confirming if c.changed_from)
        outbox = Notification.objects.count()
        runs = 0
        while Notification.objects.exclude(status=Notification.SENT).exists():
            notifications_send()
            runs += 1
            if Notification.objects.filter(status__in=[Notification.PENDING]).exists():
                time.sleep(0.2)  # the grouping window (beat would come back every 10 s)
            if runs > 10_000:
                break
        t_sent = time.perf_counter()

        per_channel: dict[str, dict] = defaultdict(lambda: {"messages": 0, "events": set()})
        for r in rx.received:
            ch = r.path.strip("/")
            per_channel[ch]["messages"] += 1
            per_channel[ch]["events"].update(e["event_id"] for e in r.body["events"])
        per_channel["mail"]["messages"] = len(box.messages)
        per_channel["mail"]["events"] = set()
        for m in box.messages:
            payload = m.get_payload(decode=True).decode().rsplit("\n", 2)[-2]
            per_channel["mail"]["events"].update(e["event_id"] for e in json.loads(payload)["events"])
        expected = {
            "ops": args.down,
            "g0": sum(1 for i in down if i % GROUPS == 0),
            "g1": sum(1 for i in down if i % GROUPS == 1),
            "one": 1 if 0 in down else 0,
            "mail": args.down,
        }
        lost = {ch: n - len(per_channel[ch]["events"]) for ch, n in expected.items()}
        statuses = Counter(Notification.objects.values_list("status", flat=True))
        out = {
            "servers": args.servers,
            "down": args.down,
            "changes_confirmed": changed,
            "check_round_s": round(round_s, 3),
            "confirming_round_s": round(t_confirmed - t_check, 3),
            "outbox_rows": outbox,
            "confirmed_to_last_delivery_s": round(t_sent - t_confirmed, 3),
            "group_window_s": args.window,
            "sender_runs": runs,
            "channels": {
                ch: {"messages": v["messages"], "events": len(v["events"]), "expected": expected[ch]}
                for ch, v in sorted(per_channel.items())
            },
            "notification_status": dict(statuses),
            "events_lost": sum(max(0, n) for n in lost.values()),
        }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{args.servers} servers, {args.down} down at once; {changed} changes confirmed")
        print(f"check round (all up): {round_s:.2f} s; confirming round: {out['confirming_round_s']:.2f} s")
        print(f"outbox rows written with the changes: {outbox}")
        print(
            f"confirming checks committed -> last message delivered: {out['confirmed_to_last_delivery_s']:.2f} s "
            f"(grouping window {args.window:g} s, {runs} sender run(s))"
        )
        for ch, v in out["channels"].items():
            print(
                f"  channel {ch:<5} {v['messages']:>3} message(s), {v['events']:>4} events (expected {v['expected']})"
            )
        print(f"notifications: {dict(statuses)}; events lost: {out['events_lost']}")
    return 0 if out["events_lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
