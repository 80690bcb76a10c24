"""One stuck receiver holds no other channel, and no message is sent twice at once: a webhook receiver on
loopback that answers 200 with `Content-Length: 100000` and then one byte a second (every socket read gets
its byte in time, so only a deadline on the whole delivery ends it), beside a receiver that answers at once.
Driven through what an operator runs: `send_notifications`, `notify_test`, and the housekeeping task."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testweb.alerts import trickling_receiver, webhook_receiver

from .crawlcheck import ROOT, clean_env

# Two channels, the trickling one first (lower id: the old sender went in id order), and one down event
# five minutes old for each: due at once.
SETUP = """
from datetime import timedelta
from django.utils import timezone
from alerts.models import Event
from alerts.services.channels import channel_add
from alerts.services.outbox import outbox_write
from crawlcore.models import Server

channel_add(name="slow", url={slow!r})
channel_add(name="fast", url={fast!r})
s = Server.objects.create(scheme="http", host="10.9.0.1", port=80)
e = Event.objects.create(kind="down", server=s, at=timezone.now() - timedelta(minutes=5), from_status="normal",
                         to_status="error")
print(outbox_write(events=[e], servers={{s.id: {{"group": "", "owner_email": ""}}}}))
"""


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def popen(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    """One migrated SQLite database for the module, copied into each test's data directory."""
    folder = tmp_path_factory.mktemp("migrated")
    proc = manage(clean_env(CRAWLADMIN_DATA_DIR=str(folder)), "migrate", "-v0")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return folder


def prepared(tmp_path, slow, fast, migrated: Path, **env_extra: str) -> dict[str, str]:
    for f in migrated.iterdir():
        if f.name.startswith("crawladmin.sqlite3"):
            shutil.copy(f, tmp_path / f.name)
    env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), **env_extra)
    setup = manage(env, "shell", "-c", SETUP.format(slow=f"{slow.base}/slow", fast=f"{fast.base}/fast"))
    assert setup.stdout.split()[-1:] == ["2"], setup.stderr[-2000:]
    return env


def statuses(tmp_path) -> dict[str, str]:
    db = sqlite3.connect(tmp_path / "crawladmin.sqlite3")
    try:
        rows = db.execute(
            "SELECT c.name, n.status FROM alerts_notification n JOIN alerts_channel c ON c.id = n.channel_id"
        ).fetchall()
    finally:
        db.close()
    return dict(rows)


def test_an_alert_to_a_second_channel_arrives_while_the_first_channels_receiver_is_still_trickling(tmp_path, migrated):
    with trickling_receiver() as slow, webhook_receiver() as fast:
        env = prepared(tmp_path, slow, fast, migrated, ALERTS_SEND_TIMEOUT="4")
        sender = popen(env, "send_notifications")
        try:
            assert fast.wait_for(1, timeout=90), "the second channel got nothing"
            # The first channel's receiver is still trickling its answer to the sender.
            assert slow.active == 1 and len(slow.received) == 1
            out, err = sender.communicate(timeout=120)
        finally:
            stop(sender)
        assert sender.returncode == 0, err.decode()[-2000:]
        # Stopped at its deadline: the trickling answer was broken off, not left running.
        assert slow.wait_ended(1, timeout=30)
    text = out.decode()
    assert "sent   fast: 1 event(s)" in text
    assert "failed, will retry slow: 1 event(s)" in text and "no complete answer within 4s" in text
    assert statuses(tmp_path) == {"fast": "sent", "slow": "pending"}
    assert len(fast.received) == 1 and len(slow.received) == 1


def test_a_retry_is_never_sent_while_the_first_attempt_may_still_be_in_flight(tmp_path, migrated):
    """The lease (1 s here) is shorter than a delivery may last: the next sender must still wait until the
    first attempt is over before it sends the message again."""
    with trickling_receiver() as slow, webhook_receiver() as fast:
        env = prepared(
            tmp_path, slow, fast, migrated, ALERTS_SEND_TIMEOUT="3", ALERTS_LEASE_SECONDS="1", ALERTS_RETRY_BASE="0"
        )
        first = popen(env, "send_notifications")
        try:
            assert slow.wait_for(1, timeout=90)
            # Other senders come along while the first attempt trickles, and after it (bounded rounds).
            for _ in range(8):
                again = manage(env, "send_notifications")
                assert again.returncode == 0, again.stderr[-2000:]
                if len(slow.received) >= 2:
                    break
            first.communicate(timeout=120)
        finally:
            stop(first)
        assert slow.wait_ended(len(slow.received), timeout=30)
        starts, ends = list(slow.starts), list(slow.ends)
    assert len(starts) >= 2, "the message was never retried"
    # Each attempt began only after the one before it had ended, and all carried one key.
    assert all(starts[i + 1] >= ends[i] for i in range(len(starts) - 1)), (starts, ends)
    assert len({r.body["idempotency_key"] for r in slow.received}) == 1
    assert len(fast.received) == 1


def test_a_delivery_of_a_killed_sender_stops_itself_at_the_deadline(tmp_path, migrated):
    """The child carrying a delivery ends on time even when the sender that started it was killed: the
    lease's promise (nothing still in flight once it is over) does not depend on the sender living."""
    with trickling_receiver() as slow, webhook_receiver() as fast:
        env = prepared(tmp_path, slow, fast, migrated, ALERTS_SEND_TIMEOUT="3")
        sender = popen(env, "send_notifications")
        try:
            assert slow.wait_for(1, timeout=90)
            os.kill(sender.pid, signal.SIGKILL)
            killed_at = time.monotonic()
            time.sleep(0.3)
            # The orphaned delivery goes on for now (checked before stop(), which waits for the child to let
            # go of the sender's output pipes, that is until the child has ended).
            assert slow.active == 1
        finally:
            stop(sender)
        assert slow.wait_ended(1, timeout=60)
        assert slow.ends[0] - killed_at < 30
    assert statuses(tmp_path)["slow"] == "sending"  # the next sender takes it once the lease is over


def test_notify_test_ends_at_the_deadline_with_one_clear_line(tmp_path, migrated):
    with trickling_receiver() as slow, webhook_receiver() as fast:
        env = prepared(tmp_path, slow, fast, migrated, ALERTS_SEND_TIMEOUT="3")
        proc = manage(env, "notify_test", "slow", timeout=120)
        assert slow.wait_ended(1, timeout=30)
    assert proc.returncode == 1
    assert "test message to slow" in proc.stderr and "no complete answer within 3s" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_housekeeping_task_delivers_other_channels_beside_a_trickling_one(tmp_path, migrated):
    with trickling_receiver() as slow, webhook_receiver() as fast:
        env = prepared(tmp_path, slow, fast, migrated, ALERTS_SEND_TIMEOUT="3")
        # The task's own code (tasks.alerts.send, which a housekeeping worker runs), in a process of its own.
        proc = manage(env, "shell", "-c", "from tasks.alerts import send; print(send.run())", timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert slow.wait_ended(1, timeout=30)
    assert proc.stdout.strip().splitlines()[-1] == "{'messages': 2, 'delivered': 1}"
    assert len(fast.received) == 1 and statuses(tmp_path) == {"fast": "sent", "slow": "pending"}


def test_a_channel_with_a_backlog_of_retries_cannot_take_every_place_of_a_run(db, settings):
    """Ten retries of one channel (ten messages, ten keys) and one new message of another, with four
    deliveries at once: the other channel's message goes out in this run."""
    from datetime import timedelta

    from django.utils import timezone

    from alerts.models import Event, Notification
    from alerts.services.channels import channel_add
    from alerts.services.send import notifications_send

    settings.ALERTS_SEND_PARALLEL = 4
    with webhook_receiver() as busy_rx, webhook_receiver() as quiet_rx:
        busy = channel_add(name="busy", url=f"{busy_rx.base}/busy").channel
        quiet = channel_add(name="quiet", url=f"{quiet_rx.base}/quiet").channel
        past = timezone.now() - timedelta(hours=1)
        for n in range(11):
            event = Event.objects.create(kind="down", at=past + timedelta(seconds=n), reason=f"event {n}")
            if n < 10:  # a retry: its message and key kept from an earlier attempt
                Notification.objects.create(
                    event=event, channel=busy, created_at=past, next_attempt_at=past, attempts=1,
                    message_key=f"k{n:02d}",
                )  # fmt: skip
            else:
                Notification.objects.create(event=event, channel=quiet, created_at=past, next_attempt_at=past)
        sent = notifications_send()
        assert len(quiet_rx.received) == 1
    assert sorted(s.channel for s in sent) == ["busy", "busy", "busy", "quiet"]
    assert Notification.objects.filter(channel=busy, status="pending").count() == 7  # handed back, next run


def test_the_trickling_receiver_sees_a_sender_hang_up_at_once():
    """The receiver's record of when an answer ended is what the retry test compares with the next start:
    it must be the moment the sender let go, not the next byte it would have written (a second later)."""
    import socket as _socket

    with trickling_receiver(interval=1.0) as slow:
        host, port = slow.server_address[:2]
        with _socket.create_connection((host, port), timeout=5) as s:
            s.sendall(b"POST /x HTTP/1.1\r\nHost: r\r\nContent-Length: 2\r\n\r\n{}")
            assert s.recv(64).startswith(b"HTTP/1.1 200")
            time.sleep(0.3)
            hung_up = time.monotonic()
        assert slow.wait_ended(1, timeout=5)
        assert slow.ends[0] - hung_up < 0.5, slow.ends[0] - hung_up
