"""The alerts commands as an operator runs them (subprocesses, embedded SQLite), with a real local webhook
receiver: check_servers rounds while one server dies and comes back, and a sender killed with SIGKILL in
the middle of a batch."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

from testweb.alerts import webhook_receiver
from testweb.monitor import scripted

from .crawlcheck import ROOT, clean_env


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_one_down_and_one_recovered_message_for_the_server_that_died(tmp_path):
    env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), CRAWL_HEADER_TIMEOUT="0.5", CRAWL_CONNECT_TIMEOUT="1")
    assert manage(env, "migrate", "-v0").returncode == 0
    # One GET per round: up, up, down, down (confirmed: N=2), up (recovered: M=1), up.
    with (
        scripted("127.0.0.231", [200, 200, 500, 500, 200, 200]) as dying,
        scripted("127.0.0.232", [200]) as steady,
        scripted("127.0.0.233", [200, 500, 200, 500, 200, 500]) as flapping,
        webhook_receiver() as rx,
    ):
        csv = tmp_path / "servers.csv"
        csv.write_text(f"{dying.url},campus\n{steady.url},campus\n{flapping.url},lab\n")
        assert manage(env, "import_servers", "--trusted", str(csv)).returncode == 0
        added = manage(env, "add_channel", "ops", f"{rx.base}/ops", "--events", "down,up")
        assert added.returncode == 0, added.stderr
        for round_ in range(6):
            proc = manage(env, "check_servers")
            assert proc.returncode == 0, proc.stderr[-2000:]
            if round_ == 3:  # the round that confirmed the failure delivered it before exiting
                assert [r.body["events"][0]["kind"] for r in rx.received] == ["down"]
        got = [(e["server"], e["kind"]) for r in rx.received for e in r.body["events"]]
    origin = dying.url.rstrip("/")
    assert got == [(origin, "down"), (origin, "up")]
    sent = manage(env, "send_notifications")
    assert "0 message(s), 0 notification(s) delivered" in sent.stdout


SETUP = """
from datetime import timedelta
from django.utils import timezone
from alerts.models import Event
from alerts.services.channels import channel_add
from alerts.services.outbox import outbox_write
from crawlcore.models import Server

base = {base!r}
for n in range({channels}):
    channel_add(name=f"c{{n}}", url=f"{{base}}/c{{n}}")
at = timezone.now() - timedelta(minutes=5)
servers, events = {{}}, []
for i in range({events}):
    s = Server.objects.create(scheme="http", host=f"10.9.0.{{i}}", port=80, group="campus")
    servers[s.id] = {{"group": "campus", "owner_email": ""}}
    events.append(Event.objects.create(kind="down", server=s, at=at, from_status="normal", to_status="error"))
print(outbox_write(events=events, servers=servers))
"""


def test_sender_killed_mid_batch_loses_no_event(tmp_path):
    channels, events = 6, 5
    # The lease is never shorter than a delivery may last (the send timeout + 5 s): 13 s here.
    env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), ALERTS_LEASE_SECONDS="2", ALERTS_SEND_TIMEOUT="8")
    assert manage(env, "migrate", "-v0").returncode == 0
    with webhook_receiver(delay_s=2.0) as rx:
        setup = manage(env, "shell", "-c", SETUP.format(base=rx.base, channels=channels, events=events))
        assert setup.stdout.split()[-1:] == [str(channels * events)], setup.stderr[-2000:]
        sender = subprocess.Popen(
            [sys.executable, "manage.py", "send_notifications"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert rx.wait_arrived(2, timeout=60), "the sender never reached the receiver"
            os.kill(sender.pid, signal.SIGKILL)  # mid-batch: messages in flight, none answered or recorded
        finally:
            sender.wait(10)
        assert sender.returncode == -signal.SIGKILL
        db = sqlite3.connect(tmp_path / "crawladmin.sqlite3")
        states = dict(db.execute("SELECT status, count(*) FROM alerts_notification GROUP BY status").fetchall())
        assert states.get("sending", 0) > 0 and states.get("sent", 0) < channels * events
        time.sleep(13.5)  # the killed sender's lease runs out
        again = manage(env, "send_notifications")
        assert again.returncode == 0, again.stderr[-2000:]
        states = dict(db.execute("SELECT status, count(*) FROM alerts_notification GROUP BY status").fetchall())
        received = list(rx.received)
    assert states == {"sent": channels * events}
    per_channel: dict[str, set[int]] = {}
    keys: dict[str, set[str]] = {}
    for r in received:
        per_channel.setdefault(r.path, set()).update(e["event_id"] for e in r.body["events"])
        keys.setdefault(r.path, set()).add(r.body["idempotency_key"])
    assert len(per_channel) == channels and all(len(ids) == events for ids in per_channel.values())
    # A message re-sent after the kill carries its first key: one key per channel, duplicates droppable.
    assert all(len(k) == 1 for k in keys.values())
