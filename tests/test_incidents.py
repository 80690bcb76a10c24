"""Incidents people can read: a confirmed outage opens one (in the transaction of the change), the recovery
closes it when nobody wrote on it; operators' updates (investigating, identified, monitoring, resolved) from
the admin set its status; the status page shows open incidents with their updates, the last 90 days', and
maintenance announced ahead, never a check's detail."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from crawlcore.models import Server
from crawler.http import FailureKind, FetchResult, Timings
from dashboard import cache
from dashboard.models import StatusPage
from monitoring.accepted_codes import AcceptedCodes
from monitoring.models import Incident, IncidentUpdate, MaintenanceWindow, ServerMonitor
from monitoring.services.check_record import checks_record
from monitoring.services.check_targets import Checked, Target
from monitoring.services.incidents import IncidentError, incident_update_add

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


def server(host: str, group: str = "uni", name: str = "") -> Server:
    s = Server.objects.create(scheme="http", host=host, port=80, group=group)
    ServerMonitor.objects.create(server=s, name=name)
    return s


def feed(s: Server, statuses: list[int | None], start=None) -> None:
    start = start or timezone.now() - timedelta(hours=1)
    for i, status in enumerate(statuses):
        result = FetchResult(
            "http://x/", "GET", status, {}, b"", None if status else FailureKind.REFUSED,
            "secret detail from /private?token=s3cret", False, 0, Timings(0.1, 0.2, 0.3, 0.1, 12.0), None,
        )  # fmt: skip
        target = Target(s.id, "http://x/", True, 300.0, 3.0, AcceptedCodes(), 2, 1)
        category = "normal" if status and status < 400 else ("error" if status else "disconnect")
        checks_record(checked=[Checked(target, result, start + timedelta(minutes=i), category)])


def test_a_confirmed_outage_opens_an_incident_and_an_unspoken_one_closes_on_recovery():
    s = server("www.uni.example", name="Main site")
    feed(s, [200, None])
    assert not Incident.objects.exists()  # one failure is not an outage
    feed(s, [None])
    incident = Incident.objects.get()
    assert (incident.title, incident.status, incident.resolved_at) == ("Main site down", "investigating", None)
    assert list(incident.updates.values_list("status", "author")) == [("investigating", "")]
    assert "s3cret" not in incident.updates.get().text
    feed(s, [None, 200])
    incident.refresh_from_db()
    assert incident.status == "resolved" and incident.resolved_at is not None
    feed(s, [None, None])
    assert Incident.objects.filter(resolved_at__isnull=True).count() == 1  # a new outage, a new incident


def test_operator_updates_set_the_status_and_the_recovery_leaves_the_resolution_to_them():
    s = server("www.uni.example")
    feed(s, [200, None, None])
    incident = Incident.objects.get()
    incident_update_add(incident_id=incident.id, status="identified", text="A disk filled up.", author="ana")
    feed(s, [200])
    incident.refresh_from_db()
    assert incident.status == "monitoring" and incident.resolved_at is None
    incident_update_add(incident_id=incident.id, status="resolved", text="Disk cleaned, alerts added.", author="ana")
    incident.refresh_from_db()
    assert incident.status == "resolved" and incident.resolved_at is not None
    with pytest.raises(IncidentError, match="needs text"):
        incident_update_add(incident_id=incident.id, status="monitoring", text="  ", author="ana")
    with pytest.raises(IncidentError, match="one of investigating"):
        incident_update_add(incident_id=incident.id, status="fixed", text="x", author="ana")


def test_an_update_from_the_admin_sets_the_incident_status_and_names_its_author(client):
    s = server("www.uni.example")
    feed(s, [200, None, None])
    incident = Incident.objects.get()
    client.force_login(User.objects.create_superuser("ana", password="pw-not-secret"))
    first = incident.updates.get()
    now = timezone.localtime()
    later = now + timedelta(seconds=5)  # its own date too: five seconds before midnight, it is tomorrow's
    data = {
        "server": s.id, "title": incident.title, "opened_at_0": now.strftime("%Y-%m-%d"),
        "opened_at_1": now.strftime("%H:%M:%S"), "status_change": incident.status_change_id or "",
        "updates-TOTAL_FORMS": "2", "updates-INITIAL_FORMS": "1", "updates-MIN_NUM_FORMS": "0",
        "updates-MAX_NUM_FORMS": "1000", "updates-0-id": first.id, "updates-0-incident": incident.id,
        "updates-0-status": first.status, "updates-0-text": first.text,
        "updates-0-at_0": timezone.localtime(first.at).strftime("%Y-%m-%d"),
        "updates-0-at_1": timezone.localtime(first.at).strftime("%H:%M:%S"),
        "updates-1-incident": incident.id, "updates-1-status": "identified",
        "updates-1-text": "Power cut in the machine room.",
        "updates-1-at_0": later.strftime("%Y-%m-%d"), "updates-1-at_1": later.strftime("%H:%M:%S"),
    }  # fmt: skip
    response = client.post(f"/admin/monitoring/incident/{incident.id}/change/", data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    incident.refresh_from_db()
    assert incident.status == "identified"
    assert incident.updates.get(status="identified").author == "ana"


def test_status_page_shows_incidents_with_updates_and_maintenance_ahead_and_no_detail():
    web, mail = server("www.uni.example", name="Main site"), server("mail.uni.example")
    other = server("secret.other.example", group="other")
    feed(web, [200, None, None])
    feed(other, [200, None, None])
    incident = Incident.objects.get(server=web)
    incident_update_add(incident_id=incident.id, status="identified", text="Router <b>broke</b>.", author="ana")
    old = Incident.objects.create(server=mail, title="Mail slow", opened_at=timezone.now() - timedelta(days=10))
    incident_update_add(incident_id=old.id, status="resolved", text="Queue drained.", author="ana")
    ancient = Incident.objects.create(server=mail, title="Ancient", opened_at=timezone.now() - timedelta(days=200))
    IncidentUpdate.objects.create(incident=ancient, status="resolved", text="x", at=ancient.opened_at)
    Incident.objects.filter(pk=ancient.pk).update(status="resolved", resolved_at=ancient.opened_at)
    MaintenanceWindow.objects.create(
        server=mail, starts_at=timezone.now() + timedelta(days=2), ends_at=timezone.now() + timedelta(days=2, hours=2),
        reason="Mail server upgrade",
    )  # fmt: skip
    StatusPage.objects.create(slug="uni", group="uni", title="University web")
    html = Client().get("/status/uni/").content.decode()
    assert "Main site down" in html and "Router &lt;b&gt;broke&lt;/b&gt;." in html and "identified" in html
    assert "The monitor confirmed it is down: not answering." in html
    assert html.index("Main site down") < html.index("Mail slow")  # open ones first
    assert "Queue drained." in html and "Ancient" not in html
    assert "Scheduled maintenance" in html and "Mail server upgrade" in html
    assert "s3cret" not in html and "secret.other.example" not in html


def test_status_page_names_a_heartbeat_or_tcp_monitor_by_its_name_without_a_link():
    from monitoring.services.monitors import monitor_add

    beat = monitor_add(kind="heartbeat", target="nightly backup", every_s=3600, group="uni").monitor
    monitor_add(kind="tcp", target="db.uni.example:5432", name="Database", group="uni")
    StatusPage.objects.create(slug="uni", group="uni", title="University web", show_addresses=True)
    html = Client().get("/status/uni/").content.decode()
    assert "nightly backup" in html and "Database" in html
    assert beat.ping_token not in html and "tcp://" not in html and "heartbeat://" not in html
