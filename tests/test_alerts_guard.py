"""Destinations shown without their secrets, and kept off private addresses: a channel's masked form ends
at the host (a webhook's path is often its secret) everywhere it is shown; an Apprise destination whose host
is, or resolves to, a private address is refused when the channel is saved and again when a message goes
out, unless ALERTS_ALLOW_PRIVATE lists its network."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from alerts.models import Channel, Notification
from alerts.services.channels import ChannelError, channel_add
from alerts.services.send import notifications_send
from testweb.alerts import webhook_receiver

from .crawlcheck import ROOT, clean_env
from .test_alerts import LATER, add_server, feed

SECRET = "SeCrEt-PaTh-ToKeN"


def test_masked_destinations_show_nothing_past_the_host(db, capsys, caplog, client, django_user_model):
    with webhook_receiver([500]) as rx:
        url = rx.base.replace("json://", "json://alice:pw-s3cr3t@") + f"/hooks/{SECRET}?token={SECRET}"
        call_command("add_channel", "hook", url, "--events", "down")
        channel = Channel.objects.get(name="hook")
        host_port = rx.base.split("://", 1)[1]
        assert channel.masked == f"json://alice:****@{host_port}/…"
        with pytest.raises(SystemExit):
            call_command("notify_test", "hook")
        sid = add_server("127.0.0.5")
        feed([sid], [200, None, None])
        with caplog.at_level(logging.DEBUG):
            sent = notifications_send(now=LATER)
        assert len(rx.received) == 2 and rx.received[0].path.startswith(f"/hooks/{SECRET}")  # it is the URL used
    admin = django_user_model.objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(admin)
    pages = [client.get("/admin/alerts/channel/"), client.get(f"/admin/alerts/channel/{channel.id}/change/")]
    pages.append(client.get("/admin/alerts/notification/"))
    shown = [capsys.readouterr(), caplog.text, [s.error for s in sent], list(Notification.objects.values("error"))]
    shown += [p.content.decode() for p in pages]
    assert all(p.status_code == 200 for p in pages)
    for text in map(str, shown):
        assert SECRET not in text and "pw-s3cr3t" not in text
    assert f"json://alice:****@{host_port}/…" in pages[0].content.decode()


def test_services_without_a_host_show_only_their_scheme(db):
    slack = channel_add(name="slack", url="slack://TTTTTTTTT/BBBBBBBBB/abcdefghijklmnopqrstuvwx").channel
    assert slack.masked == "slack://****"
    mail = channel_add(
        name="mail", url="mailto://user:pw@127.0.0.1:2525/?to=ops@example.org&from=noc@example.org"
    ).channel
    assert mail.masked == "mailto://user:****@127.0.0.1:2525/…"


@pytest.mark.parametrize(
    ("url", "address", "kind"),
    [
        ("json://127.0.0.1:9/hook", "127.0.0.1", "loopback"),
        ("json://localhost:9/hook", "127.0.0.1", "loopback"),  # a name is judged by what it resolves to
        ("form://10.1.2.3/hook", "10.1.2.3", "private"),
        ("json://169.254.169.254/latest/meta-data", "169.254.169.254", "link-local"),
        ("mailto://user:pw@192.168.1.5/?to=ops@example.org&from=noc@example.org", "192.168.1.5", "private"),
        ("ntfy://[::1]:8080/topic", "::1", "loopback"),
    ],
)
def test_apprise_destinations_to_private_addresses_are_refused_at_creation(db, settings, url, address, kind):
    settings.ALERTS_ALLOW_PRIVATE = ()
    with pytest.raises(ValidationError) as exc:
        Channel(name="x", url=url).save()
    text = " ".join(exc.value.message_dict["url"])
    assert "not an address alerts may reach: refused" in text and "ALERTS_ALLOW_PRIVATE" in text
    assert "/hook" not in text and "meta-data" not in text  # the refusal shows the masked form
    assert kind not in text and (address not in text or address in url)  # nothing learnt of the network
    with pytest.raises(ChannelError, match="destination: .* refused"):
        channel_add(name="x", url=url)
    assert not Channel.objects.exists()


def test_a_refused_destination_does_not_say_what_its_host_name_resolves_to(db, settings):
    """Else a refusal is a name-lookup oracle: save json://NAME/ and read the internal address in the answer."""
    settings.ALERTS_ALLOW_PRIVATE = ()
    with pytest.raises(ValidationError) as exc:
        Channel(name="x", url="json://localhost:9/hook").save()
    text = " ".join(exc.value.message_dict["url"])
    assert "refused" in text and "127.0.0.1" not in text and "loopback" not in text


def test_allowed_networks_and_public_services_are_accepted(db, settings):
    settings.ALERTS_ALLOW_PRIVATE = ("10.0.0.0/8",)
    channel_add(name="internal", url="form://10.1.2.3/hook")
    channel_add(name="slack", url="slack://TTTTTTTTT/BBBBBBBBB/abcdefghijklmnopqrstuvwx")  # its own public host
    with pytest.raises(ChannelError, match="not an address alerts may reach: refused"):
        channel_add(name="x", url="json://127.0.0.1:9/")


def test_add_channel_refuses_a_private_address_with_one_clear_line(tmp_path):
    env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), ALERTS_ALLOW_PRIVATE="")
    run = dict(cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], **run).returncode == 0
    proc = subprocess.run(
        [sys.executable, "manage.py", "add_channel", "meta", "json://169.254.169.254/latest/meta-data/iam"], **run
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "json://169.254.169.254/…: not an address alerts may reach: refused" in lines[0]
    assert "meta-data" not in lines[0]


def test_a_destination_private_at_delivery_is_refused_and_never_contacted(db, settings):
    sid = add_server("127.0.0.5")
    with webhook_receiver() as rx:
        port = rx.base.rsplit(":", 1)[1]
        channel_add(name="hook", url=f"json://localhost:{port}/hook", events="down")  # allowed when saved
        feed([sid], [200, None, None])
        settings.ALERTS_ALLOW_PRIVATE = ()  # and no longer: the sender checks again
        sent = notifications_send(now=LATER)
        assert rx.received == []
    assert [(s.ok, s.final) for s in sent] == [(False, False)]
    assert "not an address alerts may reach: refused" in sent[0].error and "127.0.0.1" not in sent[0].error
    assert Notification.objects.get().status == "pending"
