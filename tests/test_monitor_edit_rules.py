"""What an operator may change of a monitor, and where a monitor may send its queries: a DNS monitor's
nameserver is guarded like any address the monitor contacts (whatever the server's trust), when saved and
at each check; the kind and the nameserver are a superuser's; the API and `apply` check a health URL against
the server's trust when saved, as the admin does."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.forms.models import model_to_dict
from django.test import Client, override_settings

from crawladmin.configfile.apply import config_apply
from crawladmin.configfile.read import ConfigError
from crawlcore.models import Server
from dashboard.tokens import api_token_create
from monitoring.models import ServerMonitor
from monitoring.services.checks import monitors_check
from monitoring.services.monitors import MonitorError, monitor_add

pytestmark = pytest.mark.django_db
NO_PRIVATE = {"CRAWL_ALLOW_PRIVATE": ()}


@pytest.mark.parametrize("nameserver", ["127.0.0.1", "127.0.0.1:5353", "10.0.0.1:53", "169.254.169.254", "[::1]:53"])
def test_a_dns_monitors_nameserver_on_a_private_address_is_refused_when_saved(nameserver):
    server = Server.objects.create(scheme="dns", host="www.example.org", port=53, trusted=True)
    with override_settings(**NO_PRIVATE):
        monitor = ServerMonitor(server=server, kind="dns", dns_server=nameserver)
        with pytest.raises(ValidationError) as exc:
            monitor.full_clean()
        assert "dns_server" in exc.value.message_dict
        with pytest.raises(MonitorError, match="refused"):
            monitor_add(kind="dns", target="www.example.net", nameserver=nameserver)
    with override_settings(CRAWL_ALLOW_PRIVATE=("127.0.0.0/8", "10.0.0.0/8", "169.254.0.0/16", "::1/128")):
        ServerMonitor(server=server, kind="dns", dns_server=nameserver).full_clean()


def test_a_trusted_servers_dns_check_does_not_ask_a_private_nameserver():
    """Trust covers the server's own host, not any address typed as its nameserver."""
    server = Server.objects.create(scheme="dns", host="www.example.org", port=53, trusted=True)
    ServerMonitor.objects.create(server=server, kind="dns", dns_server="127.0.0.1:9")  # written past the check
    with override_settings(**NO_PRIVATE, MONITOR_RETRIES=0):
        (checked,) = monitors_check(server_ids=[server.id], claim=False)
    assert checked.failure == "forbidden_address"


def _operator(client, *groups):
    user = User.objects.create_user("op", is_staff=True)
    for g in ("operator", *groups):
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    client.force_login(user)
    return user


def test_an_operator_cannot_change_a_monitors_kind_or_nameserver_in_the_admin(client):
    server = Server.objects.create(scheme="http", host="intranet.example", port=80, trusted=True)
    monitor = ServerMonitor.objects.create(server=server, interval_s=60)
    _operator(client)
    form = {k: ("" if v is None else v) for k, v in model_to_dict(monitor).items()}
    form.update(kind="dns", dns_server="10.0.0.1:53", interval_s="120", server=server.id)
    for name in ("enabled", "content_regex", "tcp_tls"):
        if not form.get(name):
            form.pop(name, None)
    response = client.post(f"/admin/monitoring/servermonitor/{server.id}/change/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    monitor.refresh_from_db()
    assert (monitor.kind, monitor.dns_server, monitor.interval_s) == ("http", "", 120.0)


def test_the_api_and_apply_check_a_health_url_against_the_servers_trust():
    Server.objects.create(scheme="http", host="www.example.org", port=80)
    doc = {"servers": [{"url": "http://www.example.org"}],
           "monitors": [{"server": "http://www.example.org", "health_url": "http://127.0.0.1:9/admin"}]}  # fmt: skip
    with override_settings(**NO_PRIVATE):
        with pytest.raises(ConfigError) as exc:
            config_apply(json.dumps(doc))
        assert any("health_url" in p and "refused" in p for p in exc.value.problems)
        root = User.objects.create_user("root", is_superuser=True)
        token = api_token_create(user=root)[1]
        response = Client().post("/api/v1/monitors/", data=json.dumps(doc["monitors"][0]),
                                 content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
    assert response.status_code == 400 and "health_url" in response.json()["fields"]
    assert not ServerMonitor.objects.exists()
