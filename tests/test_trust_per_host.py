"""A trusted server's trust covers its own host only: a monitor's health URL on another host is guarded like
any crawled URL, refused when an operator saves it and again at every fetch, and the address it names is
never contacted. Content checks run on a trusted URL only, and a refusal says "refused", nothing more.

The private-address guard here allows 127.0.0.1 only (CRAWL_ALLOW_PRIVATE=127.0.0.1/32); the "private
address on another host" is a listener on 127.0.0.2 that counts every connection it accepts."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.forms.models import model_to_dict

from crawlcore.models import Server, StatusCheck
from monitoring.models import ServerMonitor
from monitoring.services.checks import monitors_check
from monitoring.services.trust import CONTENT_UNTRUSTED, REFUSED
from testweb.monitor import scripted

pytestmark = pytest.mark.django_db

SECRET_PATH = "latest/meta-data/iam/security-credentials/role"


@pytest.fixture
def guarded(settings):
    settings.CRAWL_ALLOW_PRIVATE = ("127.0.0.1/32",)
    settings.CRAWL_CONNECT_TIMEOUT, settings.CRAWL_HEADER_TIMEOUT, settings.CRAWL_BODY_TIMEOUT = 5.0, 5.0, 5.0
    settings.MONITOR_RETRIES = 0
    return settings


@pytest.fixture
def metadata():
    """The private address on another host: answers 200 "status 200" to whoever reaches it."""
    with scripted("127.0.0.2", [200]) as web:
        yield web


@pytest.fixture
def own():
    """The trusted server's own host, on a loopback address the guard does not allow either."""
    with scripted("127.0.0.3", [200]) as web:
        yield web


def trusted_server(web, **monitor) -> Server:
    host, port = web.server_address[:2]
    server = Server.objects.create(scheme="http", host=host, port=port, trusted=True)
    ServerMonitor.objects.create(server=server, **monitor)
    return server


@pytest.fixture
def operator(client):
    user = User.objects.create_user("op", password="pw-not-secret", is_staff=True)
    user.groups.add(Group.objects.get(name="operator"))
    client.force_login(user)
    return client


def monitor_form(server: Server, **changes) -> dict:
    data = model_to_dict(ServerMonitor.objects.get(server=server))
    data.update(changes)
    return {k: ("" if v is None else v) for k, v in data.items()}


def test_an_operator_cannot_point_a_trusted_servers_health_url_at_a_private_address_on_another_host(
    guarded, metadata, own, operator
):
    server = trusted_server(own)
    url = f"{metadata.url}{SECRET_PATH}"
    page = operator.post(
        f"/admin/monitoring/servermonitor/{server.id}/change/",
        monitor_form(server, health_url=url, content_must=r"status \d", content_regex=True),
    )
    assert page.status_code == 200  # the form again, with the error; a save would redirect
    assert REFUSED in page.content.decode()
    assert ServerMonitor.objects.get(server=server).health_url == ""
    assert metadata.connections == 0

    # The same URL on the server's own host is what its trust is for: saved, and fetched unguarded.
    mine = f"{own.url}{SECRET_PATH}"
    saved = operator.post(f"/admin/monitoring/servermonitor/{server.id}/change/", monitor_form(server, health_url=mine))
    assert saved.status_code == 302
    assert ServerMonitor.objects.get(server=server).health_url == mine


def test_a_stored_health_url_on_another_host_is_guarded_at_fetch_and_never_contacted(guarded, metadata, own):
    """A row that reached the database past the form (a shell, an older version) is refused by the check."""
    server = trusted_server(
        own, health_url=f"{metadata.url}{SECRET_PATH}", content_must=r"status \d", content_regex=True
    )
    (checked,) = monitors_check(server_ids=[server.id], claim=False)
    assert checked.result.failure.value == "forbidden_address"
    assert checked.category != "normal"
    row = StatusCheck.objects.get(server=server)
    assert (row.failure_kind, row.detail) == ("forbidden_address", REFUSED)  # not the address, nor why
    assert "127.0.0.2" not in row.detail
    assert metadata.connections == 0 and metadata.served == 0


def test_a_trusted_servers_own_health_url_is_fetched_unguarded_with_its_content_check(guarded, own):
    server = trusted_server(own, health_url=f"{own.url}health", content_must_not="status 200")
    (checked,) = monitors_check(server_ids=[server.id], claim=False)
    assert (checked.category, checked.failure) == ("error", "content")  # fetched, and its body read
    assert own.connections == 1


def test_content_checks_run_only_on_a_trusted_url(guarded, own, metadata, operator):
    settings = guarded
    settings.CRAWL_ALLOW_PRIVATE = ("127.0.0.0/8",)  # both addresses may be fetched: only trust differs
    host, port = own.server_address[:2]
    untrusted = Server.objects.create(scheme="http", host=host, port=port, trusted=False)
    ServerMonitor.objects.create(server=untrusted)
    page = operator.post(
        f"/admin/monitoring/servermonitor/{untrusted.id}/change/",
        monitor_form(untrusted, content_must="status 200"),
    )
    assert page.status_code == 200 and CONTENT_UNTRUSTED in page.content.decode()

    # Stored past the form: the page is fetched (the guard allows it) but its body is not judged.
    ServerMonitor.objects.filter(server=untrusted).update(content_must_not="status 200")
    (checked,) = monitors_check(server_ids=[untrusted.id], claim=False)
    assert (checked.category, checked.failure) == ("normal", "")

    # A trusted server's health URL on another (allowed) host: fetched, guarded, and its content not judged.
    trusted = trusted_server(metadata)
    ServerMonitor.objects.filter(server=trusted).update(health_url=own.url, content_must_not="status 200")
    (checked,) = monitors_check(server_ids=[trusted.id], claim=False)
    assert (checked.category, checked.failure) == ("normal", "")


def test_a_refused_crawl_fetch_tells_nothing_of_the_address_a_name_resolves_to(settings):
    """The crawler's side of the same rule: a link to an internal name is refused, and what is kept of it
    (a URL's reason, a server's exclusion) does not say which address the name resolved to."""
    from crawlcore.services.visit import GUARD_REFUSED, ServerVisit
    from crawler.lifecycle import Agent

    settings.CRAWL_ALLOW_PRIVATE = ()
    server = Server.objects.create(scheme="http", host="localhost", port=9, trusted=False)
    result = ServerVisit(server, "test-owner", Agent.LOAD).fetch("http://localhost:9/")
    assert result.failure.value == "forbidden_address"
    assert result.detail == GUARD_REFUSED and "127.0.0.1" not in result.detail and "::1" not in result.detail
