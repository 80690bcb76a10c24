"""Where operators see alerts: the channel admin (destination masked, checked, "send test"), the
notification log, the server page's notifications and "mute for ...", and /metrics."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from alerts.models import Channel, Event, Mute, Notification
from alerts.services.channels import channel_add
from crawlcore.models import Server
from dashboard.metrics import metrics_text
from monitoring.models import ServerMonitor
from testweb.alerts import webhook_receiver

SECRET = "json://alice:pw-s3cr3t@127.0.0.1:9/hook"


@pytest.fixture
def root(client, db):
    client.force_login(User.objects.create_superuser("root", password="pw-not-secret"))
    return client


@pytest.fixture
def logged(db):
    server = Server.objects.create(scheme="http", host="127.0.0.5", port=80, group="campus")
    ServerMonitor.objects.create(server=server)
    channel = channel_add(name="hook", url=SECRET).channel
    now = timezone.now()
    event = Event.objects.create(kind="down", server=server, at=now, from_status="normal", to_status="error")
    Notification.objects.create(
        event=event, channel=channel, server=server, created_at=now, next_attempt_at=now, status="sent", attempts=1
    )
    event2 = Event.objects.create(kind="up", server=server, at=now, from_status="error", to_status="normal")
    Notification.objects.create(
        event=event2, channel=channel, server=server, created_at=now, next_attempt_at=now, status="failed",
        attempts=8, error="Failed to send JSON POST notification: error=500.",
    )  # fmt: skip
    return server, channel


def test_channel_admin_never_shows_the_secret_and_refuses_a_bad_destination(root, logged):
    _, channel = logged
    page = root.get(f"/admin/alerts/channel/{channel.id}/change/").content.decode()
    assert "pw-s3cr3t" not in page and "alice:****@127.0.0.1:9/…" in page and "/hook" not in page
    listing = root.get("/admin/alerts/channel/").content.decode()
    assert "pw-s3cr3t" not in listing
    bad = root.post(
        "/admin/alerts/channel/add/",
        {"name": "new", "destination": "slak://x/y/z", "enabled": "on", "owner_of": "", **_empty_rules()},
    )
    assert bad.status_code == 200 and "is not a notification service Apprise knows" in bad.content.decode()
    # Saved again with the destination left empty: the old one stays.
    kept = root.post(
        f"/admin/alerts/channel/{channel.id}/change/",
        {"name": "hook", "destination": "", "enabled": "on", "owner_of": "", **_empty_rules()},
    )
    assert kept.status_code == 302
    channel.refresh_from_db()
    assert channel.url == SECRET


def _empty_rules() -> dict[str, str]:
    return {
        "rules-TOTAL_FORMS": "0",
        "rules-INITIAL_FORMS": "0",
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
    }


def test_send_test_action_reports_the_outcome(root, db):
    with webhook_receiver([500]) as rx:
        channel = channel_add(name="hook", url=rx.base + "/").channel
        response = root.post(
            "/admin/alerts/channel/", {"action": "send_test", "_selected_action": [channel.id]}, follow=True
        )
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [
        "test message to hook failed: Failed to send JSON POST notification: Internal server error., error=500."
    ]
    assert len(rx.received) == 1


def test_notification_log_filters_by_status_and_server(root, logged):
    server, _ = logged
    failed = root.get("/admin/alerts/notification/?status__exact=failed").content.decode()
    assert "error=500" in failed and "1 notification" in failed
    mine = root.get(f"/admin/alerts/notification/?server__exact={server.id}")
    assert mine.status_code == 200 and "2 notifications" in mine.content.decode()


def test_server_page_lists_notifications_and_mutes(client, logged):
    server, _ = logged
    user = User.objects.create_user("op", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="operator"))
    client.force_login(user)
    page = client.get(f"/dashboard/servers/{server.id}/").content.decode()
    assert "down (normal → error)" in page and "error=500" in page
    assert "mute alerts for" in page
    client.post(f"/alerts/servers/{server.id}/mute", {"for": "4h"})
    mute = Mute.objects.get()
    assert mute.server_id == server.id
    assert timedelta(hours=3.9) < mute.until - timezone.now() <= timedelta(hours=4)
    assert "muted until" in client.get(f"/dashboard/servers/{server.id}/").content.decode()
    client.post(f"/alerts/servers/{server.id}/mute", {"for": "end"})
    assert Mute.objects.get().until <= timezone.now()


def test_viewer_cannot_mute(client, logged):
    server, _ = logged
    user = User.objects.create_user("v", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    assert client.post(f"/alerts/servers/{server.id}/mute", {"for": "4h"}).status_code == 403
    assert not Mute.objects.exists()


def test_an_operator_of_one_group_cannot_mute_another_groups_server(client, logged):
    server, _ = logged
    Server.objects.filter(id=server.id).update(group="chemistry")
    user = User.objects.create_user("p", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="operator"), Group.objects.get_or_create(name="servers:physics")[0])
    client.force_login(user)
    assert client.post(f"/alerts/servers/{server.id}/mute", {"for": "4h"}).status_code == 404
    assert not Mute.objects.exists()


def test_metrics_count_sent_and_failed_per_channel(logged):
    text = metrics_text()
    assert 'crawladmin_notifications{channel="hook",status="sent"} 1' in text
    assert 'crawladmin_notifications{channel="hook",status="failed"} 1' in text
    assert "pw-s3cr3t" not in text and Channel.objects.count() == 1


def test_server_page_shows_the_certificates_days_left(root, logged):
    from monitoring.models import ServerCertificate

    server, _ = logged
    now = timezone.now()
    ServerCertificate.objects.create(
        server=server,
        subject="CN = x",
        issuer="CN = Test CA",
        not_after=now + timedelta(days=12, hours=1),
        checked_at=now,
    )
    page = root.get(f"/dashboard/servers/{server.id}/").content.decode()
    assert "certificate 12 days left (CN = Test CA)" in page


def test_mute_for_action_on_the_server_list(root, logged):
    server, _ = logged
    root.post("/admin/crawladmin/server/", {"action": "mute_24h", "_selected_action": [server.id]}, follow=True)
    mute = Mute.objects.get(server=server)
    assert timedelta(hours=23.9) < mute.until - timezone.now() <= timedelta(hours=24)
    root.post("/admin/crawladmin/server/", {"action": "unmute", "_selected_action": [server.id]}, follow=True)
    assert Mute.objects.get().until <= timezone.now()
