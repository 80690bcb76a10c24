"""Quorum across locations: each crawler number confirms on its own, and a server's status
moves when K of its locations agree; the alert says what each location saw."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from alerts.models import Event
from alerts.services.channels import channel_add
from crawler.status import Status
from monitoring.models import LocationState, ServerMonitor, StatusChange
from monitoring.quorum import LocationsError, locations_parse, quorum_decide, quorum_needed
from monitoring.services.check_claim import monitors_claim
from monitoring.services.check_dispatch import monitors_dispatch_due

from .test_alerts import T0, add_server, fake

N, D, E, U = Status.NORMAL, Status.DISCONNECT, Status.ERROR, Status.UNKNOWN


def test_quorum_needs_k_locations_on_the_other_side():
    assert quorum_needed(3, None) == 2 and quorum_needed(4, None) == 3 and quorum_needed(3, 5) == 3
    assert quorum_decide(N, {1: D, 2: N, 3: N}, 2) is None  # one location alone changes nothing
    change = quorum_decide(N, {1: D, 2: E, 3: N}, 2)
    assert change.to_status is E  # down by two locations; a tie between the bad kinds goes to error
    assert change.reason == "2 of 3 locations (quorum 2): #1 disconnect, #2 error, #3 normal"
    assert change.seen == {"1": "disconnect", "2": "error", "3": "normal"}
    assert quorum_decide(D, {1: N, 2: D, 3: U}, 2) is None
    assert quorum_decide(D, {1: N, 2: N, 3: D}, 2).to_status is N
    assert quorum_decide(D, {1: E, 2: E, 3: N}, 2).to_status is E  # a change of failure needs K too
    assert quorum_decide(U, {1: N, 2: U, 3: U}, 2) is None


def test_locations_parse():
    assert locations_parse(" 3,1,,2,1") == (1, 2, 3)
    with pytest.raises(LocationsError, match="'x' is not a crawler number"):
        locations_parse("1,x")


def check_from(num: int, sid: int, status: int | None, minute: int) -> None:
    from monitoring.services.check_record import checks_record

    with override_settings(CRAWLER_NUM=num):
        checks_record(checked=[fake(sid, status, T0 + timedelta(minutes=minute))])


def test_two_of_three_locations_agreeing_change_the_status_one_does_not(db):
    sid = add_server("127.0.0.5", group="campus")
    ServerMonitor.objects.filter(server_id=sid).update(locations="1,2,3")
    channel_add(name="all", url="json://127.0.0.1:9/")
    for num in (1, 2, 3):
        check_from(num, sid, 200, 0)
    assert ServerMonitor.objects.get(server_id=sid).status == "normal"
    check_from(1, sid, None, 1)
    check_from(1, sid, None, 2)  # location 1 confirms disconnect on its own ...
    assert LocationState.objects.get(server_id=sid, crawler_num=1).status == "disconnect"
    assert ServerMonitor.objects.get(server_id=sid).status == "normal"  # ... which is not a quorum
    assert not Event.objects.exists()
    check_from(2, sid, None, 1)
    check_from(2, sid, None, 2)
    assert ServerMonitor.objects.get(server_id=sid).status == "disconnect"
    change = StatusChange.objects.get(to_status="disconnect")
    assert change.reason == "2 of 3 locations (quorum 2): #1 disconnect, #2 disconnect, #3 normal"
    event = Event.objects.get()
    assert (event.kind, event.locations) == ("down", {"1": "disconnect", "2": "disconnect", "3": "normal"})
    check_from(7, sid, 200, 3)  # a crawler number not listed is recorded but counts for no location
    assert ServerMonitor.objects.get(server_id=sid).status == "disconnect"


def test_each_location_claims_its_own_turn_and_dispatch_reaches_every_location(db, monkeypatch):
    from monitoring.services import check_dispatch

    sid = add_server("127.0.0.5")
    ServerMonitor.objects.filter(server_id=sid).update(locations="1,2")
    sent = []
    monkeypatch.setattr(
        check_dispatch,
        "enqueue_checks_on_commit",
        lambda *, server_ids, crawler_num: sent.append((crawler_num, server_ids)),
    )
    with override_settings(CELERY_EMBEDDED=False):
        monitors_dispatch_due()
    assert sorted(sent) == [(1, [sid]), (2, [sid])]
    with override_settings(CRAWLER_NUM=1):
        assert [m.server_id for m in monitors_claim(server_ids=[sid])] == [sid]
        assert monitors_claim(server_ids=[sid]) == []  # its turn is taken
    with override_settings(CRAWLER_NUM=2):
        assert [m.server_id for m in monitors_claim(server_ids=[sid])] == [sid]
    with override_settings(CRAWLER_NUM=3):
        assert monitors_claim(server_ids=[sid]) == []
