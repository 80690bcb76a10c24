"""Alerts against the database (SQLite), a real local webhook receiver and a real SMTP server (aiosmtpd):
channels checked at save, events and outbox rows written with the confirmed change, routing, grouping,
retries with the outcome recorded, idempotency keys, e-mail, muting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import override_settings

from alerts.models import Channel, Event, Notification, Rule
from alerts.services.channels import ChannelError, channel_add
from alerts.services.mutes import mute_add
from alerts.services.send import notifications_send
from crawler.http import FailureKind, FetchResult, Timings
from monitoring.accepted_codes import AcceptedCodes
from monitoring.server_list import parse_server_row
from monitoring.services.checks import Checked, Target, checks_record
from monitoring.services.servers import servers_import
from testweb.alerts import smtp_server, webhook_receiver

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
LATER = T0 + timedelta(hours=1)


def add_server(host: str, group: str = "", **server_fields) -> int:
    from dataclasses import replace

    from crawlcore.models import Server

    sid = servers_import(trusted=True, rows=[replace(parse_server_row([f"http://{host}/"]), group=group)]).server_ids[0]
    if server_fields:
        Server.objects.filter(id=sid).update(**server_fields)
    return sid


def fake(server_id: int, status: int | None, at: datetime) -> Checked:
    result = FetchResult(
        "http://x/", "GET", status, {}, b"", None if status else FailureKind.REFUSED, "", False, 0,
        Timings(0.1, 0.2, 0.3, 0.1, 12.0), None,
    )  # fmt: skip
    target = Target(server_id, "http://x/", True, 300.0, 3.0, AcceptedCodes(), 2, 1)
    category = "normal" if status and status < 400 else ("error" if status else "disconnect")
    return Checked(target, result, at, category)


def feed(server_ids: list[int], statuses: list[int | None], start: datetime = T0) -> None:
    """One round per status: every server gets it, all in one batch as a worker writes them."""
    for i, status in enumerate(statuses):
        at = start + timedelta(seconds=10 * i)
        checks_record(checked=[fake(sid, status, at) for sid in server_ids])


# --------------------------------------------------------------------------------------------------
# Channels


def test_invalid_destination_is_refused_at_save_with_a_clear_message(db):
    with pytest.raises(ValidationError) as exc:
        Channel(name="x", url="xyz://hook").save()
    assert "'xyz://' is not a notification service Apprise knows" in str(exc.value)
    with pytest.raises(ValidationError, match="incomplete or malformed json:// URL"):
        Channel(name="x", url="json://").save()
    with pytest.raises(ValidationError, match="'ops at example' is not an e-mail address"):
        Channel(name="x", url="ops at example").save()
    with override_settings(EMAIL_HOST=""), pytest.raises(ValidationError, match="EMAIL_HOST, which is not set"):
        Channel(name="x", url="ops@example.org").save()
    with pytest.raises(CommandError, match="destination: 'slak://' is not a notification service"):
        call_command("add_channel", "ops", "slak://T1/B2/C3")
    assert not Channel.objects.exists()


def test_secrets_are_masked_where_shown(db, capsys):
    call_command("add_channel", "hook", "json://alice:s3cr3t-pw@127.0.0.1:9/x", "--events", "down,up")
    out = capsys.readouterr().out
    assert "s3cr3t-pw" not in out and "alice:****@127.0.0.1:9/…" in out
    assert Channel.objects.get(name="hook").masked == "json://alice:****@127.0.0.1:9/…"
    slack = channel_add(name="slack", url="slack://TTTTTTTTT/BBBBBBBBB/abcdefghijklmnopqrstuvwx").channel
    assert "abcdefghijklmnopqrstuvwx" not in slack.masked


def test_add_channel_routes_to_a_group_or_a_server_and_checks_the_kinds(db):
    add_server("127.0.0.5", group="campus")
    channel_add(name="campus", url="json://127.0.0.1:9/", group="campus", events="down")
    channel_add(name="one", url="json://127.0.0.1:9/", server_host="127.0.0.5")
    rules = {r.channel.name: (r.kinds, r.group, r.server_id is not None) for r in Rule.objects.all()}
    assert rules == {"campus": ("down", "campus", False), "one": ("down,up,delay,cert,content,domain,beat", "", True)}
    with pytest.raises(ChannelError, match="unknown event kind dwn"):
        channel_add(name="x", url="json://127.0.0.1:9/", events="dwn")
    with pytest.raises(ChannelError, match="no server with host"):
        channel_add(name="x", url="json://127.0.0.1:9/", server_host="nowhere.example")


# --------------------------------------------------------------------------------------------------
# Events and the outbox


def test_outbox_rows_are_written_with_the_confirmed_change_per_matching_channel(db):
    a, b = add_server("127.0.0.5", group="campus"), add_server("127.0.0.6", group="lab", owner_email="o@lab.org")
    channel_add(name="all", url="json://127.0.0.1:9/all")
    channel_add(name="campus", url="json://127.0.0.1:9/campus", group="campus")
    channel_add(name="b-only", url="json://127.0.0.1:9/b", server_host="127.0.0.6", events="up")
    with override_settings(EMAIL_HOST="127.0.0.1"):
        feed([a, b], [200, None, None, 200])  # up, then down (confirmed by the second failure), recovered
    events = {(e.server_id, e.kind) for e in Event.objects.all()}
    assert events == {(a, "down"), (b, "down"), (a, "up"), (b, "up")}  # unknown -> normal tells nobody
    rows = {(n.event.server_id, n.event.kind, n.channel.name) for n in Notification.objects.select_related()}
    assert rows == {
        (a, "down", "all"), (a, "down", "campus"), (a, "up", "all"), (a, "up", "campus"),
        (b, "down", "all"), (b, "up", "all"), (b, "up", "b-only"),
        (b, "down", "owner o@lab.org"), (b, "up", "owner o@lab.org"),
    }  # fmt: skip
    assert Channel.objects.get(owner_of="o@lab.org").url == "email:o@lab.org"


def test_a_channel_naming_an_owner_does_not_take_the_owners_alerts(db):
    """owner_of marks the channel made for an owner's address; one pointing anywhere else is not theirs."""
    b = add_server("127.0.0.6", group="lab", owner_email="o@lab.org")
    # As it could be written before the check (a bulk write skips save()):
    Channel.objects.bulk_create([Channel(name="owner o@lab.org", url="json://127.0.0.1:9/taken", owner_of="o@lab.org")])
    with override_settings(EMAIL_HOST="127.0.0.1"):
        feed([b], [200, None, None])
    rows = {(n.channel.name, n.channel.url) for n in Notification.objects.select_related("channel")}
    assert rows and all(url == "email:o@lab.org" for _, url in rows), rows
    with override_settings(EMAIL_HOST="127.0.0.1"), pytest.raises(ValidationError, match="owner"):
        Channel(name="other", url="json://127.0.0.1:9/x", owner_of="o@lab.org").save()


def test_flapping_inside_the_confirmation_window_sends_nothing(db):
    sid = add_server("127.0.0.5")
    channel_add(name="all", url="json://127.0.0.1:9/")
    feed([sid], [200, None, 200, 500, 200, None, 200])  # never two failures in a row (N=2)
    assert not Event.objects.exists() and not Notification.objects.exists()
    assert notifications_send(now=LATER) == []


def test_a_failing_hook_rolls_back_the_change(db, monkeypatch):
    """Same transaction: no StatusChange without its outbox rows."""
    from alerts.services import outbox
    from monitoring.models import StatusChange

    sid = add_server("127.0.0.5")
    channel_add(name="all", url="json://127.0.0.1:9/")
    feed([sid], [200, None])

    def broken(**kw):
        raise RuntimeError("outbox unavailable")

    monkeypatch.setattr(outbox, "outbox_write", broken)
    with pytest.raises(RuntimeError):
        feed([sid], [None], start=T0 + timedelta(minutes=5))
    assert not StatusChange.objects.filter(to_status="disconnect").exists()


# --------------------------------------------------------------------------------------------------
# Sending


def test_webhook_gets_one_grouped_json_message_with_an_idempotency_key(db):
    ids = [add_server(f"127.0.0.{i}", group="campus") for i in range(10, 22)]
    other = add_server("127.0.0.30", group="lab")
    with webhook_receiver() as rx:
        channel_add(name="campus", url=f"{rx.base}/campus", group="campus", events="down")
        feed([*ids, other], [200, None, None])
        # Inside the grouping window nothing is due yet.
        assert notifications_send(now=T0 + timedelta(seconds=30)) == []
        sent = notifications_send(now=LATER)
        assert [(s.channel, s.events, s.ok) for s in sent] == [("campus", 12, True)]
        assert len(rx.received) == 1
        got = rx.received[0]
    assert got.path == "/campus"
    assert got.body["title"] == "[crawladmin] 12 servers down in group campus"
    assert got.body["idempotency_key"] == got.headers["Idempotency-Key"] == sent[0].key
    assert sorted(e["server"] for e in got.body["events"]) == sorted(f"http://127.0.0.{i}" for i in range(10, 22))
    assert {e["kind"] for e in got.body["events"]} == {"down"}
    assert "- http://127.0.0.10: normal -> disconnect (2 checks in a row: disconnect)" in got.body["message"]
    assert set(Notification.objects.values_list("status", "attempts")) == {("sent", 1)}
    assert notifications_send(now=LATER + timedelta(hours=1)) == []  # nothing twice


@override_settings(ALERTS_RETRY_BASE=30.0, ALERTS_MAX_ATTEMPTS=3)
def test_receiver_answering_500_then_200_is_retried_and_the_outcome_recorded(db):
    sid = add_server("127.0.0.5")
    with webhook_receiver([500, 200]) as rx:
        channel_add(name="hook", url=rx.base + "/", events="down")
        feed([sid], [200, None, None])
        first = notifications_send(now=LATER)
        row = Notification.objects.get()
        assert [(s.ok, s.final) for s in first] == [(False, False)]
        assert (row.status, row.attempts) == ("pending", 1)
        assert "500" in row.error and row.next_attempt_at >= LATER + timedelta(seconds=30)
        assert notifications_send(now=LATER + timedelta(seconds=5)) == []  # backing off
        second = notifications_send(now=LATER + timedelta(seconds=31))
        assert [s.ok for s in second] == [True]
        assert [r.status for r in rx.received] == [500, 200]
        # The retry is the same message: a receiver that did get the first can drop it.
        assert rx.received[0].body["idempotency_key"] == rx.received[1].body["idempotency_key"]
    row.refresh_from_db()
    assert (row.status, row.attempts, row.error) == ("sent", 2, "")


@override_settings(ALERTS_RETRY_BASE=0.0, ALERTS_MAX_ATTEMPTS=2)
def test_delivery_gives_up_after_the_attempts_limit(db):
    sid = add_server("127.0.0.5")
    with webhook_receiver([503]) as rx:
        channel_add(name="hook", url=rx.base + "/", events="down")
        feed([sid], [200, None, None])
        notifications_send(now=LATER)
        last = notifications_send(now=LATER + timedelta(seconds=1))
        assert len(rx.received) == 2
    assert [(s.ok, s.final) for s in last] == [(False, True)]
    assert Notification.objects.get().status == "failed"
    assert notifications_send(now=LATER + timedelta(hours=5)) == []


def test_email_arrives_through_a_real_smtp_server(db):
    sid = add_server("127.0.0.5", group="campus")
    smtp = "django.core.mail.backends.smtp.EmailBackend"  # pytest-django puts the in-memory one in its place
    with smtp_server() as box, override_settings(EMAIL_BACKEND=smtp, EMAIL_HOST=box.host, EMAIL_PORT=box.port):
        channel_add(name="mail", url="noc@example.org", events="down,up")
        feed([sid], [200, None, None, 200])
        sent = notifications_send(now=LATER)
        assert [s.ok for s in sent] == [True]
    assert len(box.messages) == 1
    mail = box.messages[0]
    assert mail["To"] == "noc@example.org"
    assert mail["Subject"].startswith("[crawladmin] ")
    assert mail["Idempotency-Key"] == sent[0].key
    text = mail.get_payload(decode=True).decode()
    assert "http://127.0.0.5: normal -> disconnect" in text and "http://127.0.0.5: disconnect -> normal" in text


def test_notify_test_exits_1_when_the_message_fails(db, capsys):
    with webhook_receiver([200, 500]) as rx:
        channel_add(name="hook", url=rx.base + "/t")
        call_command("notify_test", "hook")
        assert "sent a test message to hook" in capsys.readouterr().out
        with pytest.raises(SystemExit) as exit_:
            call_command("notify_test", "hook")
        assert exit_.value.code == 1
    assert "failed" in capsys.readouterr().err
    assert list(Notification.objects.order_by("id").values_list("status", flat=True)) == ["sent", "failed"]
    assert rx.received[0].body["title"] == "[crawladmin] test message to hook"


def test_mute_keeps_the_event_but_notifies_no_one(db):
    a, b = add_server("127.0.0.5", group="campus"), add_server("127.0.0.6", group="lab")
    channel_add(name="all", url="json://127.0.0.1:9/")
    mute_add(group="campus", seconds=86400, now=T0)
    feed([a, b], [200, None, None])
    assert set(Event.objects.values_list("server_id", flat=True)) == {a, b}
    assert set(Notification.objects.values_list("server_id", flat=True)) == {b}


def test_recurring_maintenance_silences_and_is_left_out_of_the_status(db):
    from alerts.models import MaintenanceSchedule
    from alerts.services.maintenance_windows import maintenance_windows_write
    from crawlcore.models import StatusCheck
    from monitoring.models import MaintenanceWindow, ServerMonitor

    a, b = add_server("127.0.0.5", group="campus"), add_server("127.0.0.6", group="lab")
    channel_add(name="all", url="json://127.0.0.1:9/")
    # Every day 10:00-10:30 UTC for group campus; T0 is 10:00.
    sched = MaintenanceSchedule(group="campus", schedule="0 10 * * *", duration_minutes=30, reason="patching")
    sched.full_clean()
    sched.save()
    assert maintenance_windows_write(now=T0 - timedelta(hours=1)) == 2  # today's and tomorrow's
    assert maintenance_windows_write(now=T0 - timedelta(hours=1)) == 0  # idempotent
    assert MaintenanceWindow.objects.filter(server_id=a).first().reason == "scheduled: patching"
    feed([a, b], [200, None, None, None])  # inside the window for a, not for b
    assert set(Event.objects.values_list("server_id", "kind")) == {(b, "down")}
    assert ServerMonitor.objects.get(server_id=a).status == "unknown"  # no check outside a window yet
    assert StatusCheck.objects.filter(server_id=a).count() == 4
    feed([a], [None, None], start=T0 + timedelta(minutes=31))  # after the window: an outage is an outage
    assert set(Event.objects.values_list("server_id", "kind")) == {(b, "down"), (a, "down")}
    with pytest.raises(ValidationError, match="neither a 5-field cron"):
        MaintenanceSchedule(group="x", schedule="sometimes", duration_minutes=5).full_clean()


def test_import_servers_takes_an_optional_owner_column(db, tmp_path, capsys):
    from crawlcore.models import Server

    csv = tmp_path / "servers.csv"
    csv.write_text("127.0.0.5,campus,,,,,web@campus.example\n127.0.0.6,lab\n127.0.0.7,lab,,,,,not-an-address\n")
    with pytest.raises(SystemExit):
        call_command("import_servers", "--trusted", str(csv))
    assert "line 3: owner 'not-an-address' is not an e-mail address" in capsys.readouterr().err
    assert dict(Server.objects.values_list("host", "owner_email")) == {
        "127.0.0.5": "web@campus.example",
        "127.0.0.6": "",
    }


@override_settings(ALERTS_REMINDER_HOURS=2.0)
def test_a_server_still_down_is_reminded_every_n_hours(db):
    from alerts.services.reminders import reminders_write

    sid = add_server("127.0.0.5")
    channel_add(name="all", url="json://127.0.0.1:9/", events="down")
    feed([sid], [200, None, None])  # down at T0 + 20 s
    assert reminders_write(now=T0 + timedelta(hours=1)) == 0
    assert reminders_write(now=T0 + timedelta(hours=2, minutes=1)) == 1
    assert reminders_write(now=T0 + timedelta(hours=3)) == 0  # told an hour ago
    reminder = Event.objects.order_by("-id").first()
    assert (reminder.kind, reminder.reason) == ("down", "reminder: still disconnect")
    assert Notification.objects.filter(event=reminder).count() == 1
    feed([sid], [200], start=T0 + timedelta(hours=3))
    assert reminders_write(now=T0 + timedelta(hours=9)) == 0  # recovered


def test_a_failed_delivery_never_records_or_logs_the_secret(db, caplog):
    from testweb.monitor import refusing_url

    sid = add_server("127.0.0.5")
    url = refusing_url("127.0.0.1").replace("http://", "json://alice:pw-s3cr3t@")
    channel_add(name="hook", url=url, events="down")
    feed([sid], [200, None, None])
    with caplog.at_level("DEBUG"):
        sent = notifications_send(now=LATER)
    assert [s.ok for s in sent] == [False]
    row = Notification.objects.get()
    assert row.error and "pw-s3cr3t" not in row.error
    assert "pw-s3cr3t" not in caplog.text and "pw-s3cr3t" not in sent[0].error


def test_embedded_mode_sends_from_the_in_process_worker_after_the_window(
    db, monkeypatch, django_capture_on_commit_callbacks
):
    from celery import current_app

    sid = add_server("127.0.0.5")
    channel_add(name="all", url="json://127.0.0.1:9/")
    queued = []
    monkeypatch.setattr(current_app, "send_task", lambda name, **kw: queued.append((name, kw)))
    with (
        override_settings(CELERY_EMBEDDED=True, ALERTS_GROUP_WINDOW=60.0),
        django_capture_on_commit_callbacks(execute=True),
    ):
        feed([sid], [200, None, None])
    assert queued == [("tasks.alerts.send", {"countdown": 61.0})]
