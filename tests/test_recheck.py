"""The re-check decisions of crawler.recheck, by single replies: no network, no Django."""

from __future__ import annotations

import pytest

from crawler.lifecycle import Agent, Event
from crawler.recheck import (
    Finding,
    Known,
    Outcome,
    Recheck,
    Reply,
    Request,
    body_checksum,
    compare_validators,
    event_for_recheck,
)

URL = "http://a.example/p.html"
BODY = b"<html>same</html>"
LM = "Tue, 14 Nov 2023 22:13:20 GMT"
KNOWN = Known(URL, etag='"v1"', last_modified=LM, content_length=len(BODY), checksum=body_checksum(BODY))


def _head(headers: dict[str, str], known: Known = KNOWN, status: int = 200) -> Request | Finding:
    return Recheck(known).feed(Reply(status, headers))


@pytest.mark.parametrize(
    ("headers", "outcome", "reason"),
    [
        ({"etag": '"v1"', "last-modified": LM, "content-length": str(len(BODY))}, Outcome.UNCHANGED, "etag"),
        ({"etag": '"v2"', "last-modified": LM}, Outcome.CHANGED, "etag differs"),
        ({"etag": 'W/"v1"'}, Outcome.UNCHANGED, "same etag"),  # weak comparison
        ({"last-modified": "Tue, 14 Nov 2023 23:13:20 GMT"}, Outcome.CHANGED, "last-modified differs"),
        ({"last-modified": "Tuesday, 14-Nov-23 22:13:20 GMT"}, Outcome.UNCHANGED, "same last-modified"),
        ({"content-length": "999"}, Outcome.CHANGED, "content-length differs"),
        ({"content-length": str(len(BODY))}, Outcome.UNCHANGED, "same content-length"),
    ],
)
def test_head_decides_by_etag_last_modified_and_content_length(headers, outcome, reason):
    step = _head(headers)
    assert isinstance(step, Finding) and step.outcome == outcome and reason in step.reason


def test_head_without_any_stored_validator_falls_back_to_a_conditional_get():
    recheck = Recheck(KNOWN)
    step = recheck.feed(Reply(200, {"content-type": "text/html"}))
    assert step == Request("GET", {"If-None-Match": '"v1"', "If-Modified-Since": LM})
    assert recheck.request == step


@pytest.mark.parametrize("status", [405, 501])
def test_head_refused_falls_back_to_get_and_304_means_unchanged(status):
    recheck = Recheck(KNOWN)
    assert recheck.feed(Reply(status, {"etag": '"other"'})) == Request(
        "GET", {"If-None-Match": '"v1"', "If-Modified-Since": LM}
    )
    step = recheck.feed(Reply(304, {"etag": '"v1"'}, b""))
    assert step == Finding(Outcome.UNCHANGED, "304 not modified")


def test_405_to_the_get_itself_is_a_failure_not_another_fallback():
    recheck = Recheck(KNOWN)
    recheck.feed(Reply(405, {}))
    assert recheck.feed(Reply(405, {}, b"")).outcome == Outcome.NO_RESPONSE


def test_full_get_answer_is_compared_by_checksum():
    known = Known(URL, checksum=body_checksum(BODY))  # no validators: the GET is not conditional
    recheck = Recheck(known)
    assert recheck.feed(Reply(405, {})) == Request("GET", {})
    assert recheck.feed(Reply(200, {}, BODY)).outcome == Outcome.UNCHANGED
    recheck = Recheck(known)
    recheck.feed(Reply(200, {}))  # HEAD answered, but with nothing to compare
    assert recheck.feed(Reply(200, {}, BODY + b"!")) == Finding(Outcome.CHANGED, "checksum differs")


def test_server_ignoring_the_condition_is_judged_by_the_body():
    recheck = Recheck(KNOWN)
    recheck.feed(Reply(200, {}))
    assert recheck.feed(Reply(200, {"etag": '"v1"'}, BODY)).outcome == Outcome.UNCHANGED


@pytest.mark.parametrize(
    ("status", "headers", "outcome"),
    [
        (410, {}, Outcome.GONE),
        (404, {}, Outcome.NO_RESPONSE),
        (500, {}, Outcome.NO_RESPONSE),
        (None, {}, Outcome.NO_RESPONSE),
        (429, {}, Outcome.BACK_OFF),
        (503, {"retry-after": "30"}, Outcome.BACK_OFF),
        (503, {}, Outcome.NO_RESPONSE),
    ],
)
def test_failures_gone_and_back_off(status, headers, outcome):
    step = _head(headers, status=status)
    assert isinstance(step, Finding) and step.outcome == outcome


def test_never_loaded_url_answering_means_reload_without_a_get():
    step = _head({"etag": '"v1"'}, known=Known(URL, loaded=False))
    assert step == Finding(Outcome.CHANGED, "never loaded")


@pytest.mark.parametrize(
    ("stored", "status", "location", "outcome"),
    [
        ("http://a.example/new", 301, "/new", Outcome.UNCHANGED),
        ("http://a.example/new", 301, "http://a.example/other", Outcome.CHANGED),
        ("http://a.example/new", 200, None, Outcome.CHANGED),
        ("", 302, "/somewhere", Outcome.CHANGED),
    ],
)
def test_redirects_compare_their_target(stored, status, location, outcome):
    headers = {"location": location} if location else {}
    step = _head(headers, known=Known(URL, redirect_to=stored), status=status)
    assert isinstance(step, Finding) and step.outcome == outcome


def test_compare_validators_has_nothing_to_say_without_common_validators():
    assert compare_validators(Known(URL, etag='"x"'), {"last-modified": LM}) is None


@pytest.mark.parametrize(
    ("agent", "outcome", "event"),
    [
        (Agent.ACTIVE_SCAN, Outcome.CHANGED, Event.CHANGED),
        (Agent.ACTIVE_SCAN, Outcome.UNCHANGED, Event.UNCHANGED),
        (Agent.INACTIVE_SCAN, Outcome.CHANGED, Event.RESPONDS_RELOAD),
        (Agent.INACTIVE_SCAN, Outcome.UNCHANGED, Event.RESPONDS),
        (Agent.INACTIVE_SCAN, Outcome.NO_RESPONSE, Event.NO_RESPONSE),
        (Agent.ACTIVE_SCAN, Outcome.GONE, Event.GONE),
        (Agent.INACTIVE_SCAN, Outcome.BACK_OFF, None),
    ],
)
def test_what_a_recheck_means_for_each_agent(agent, outcome, event):
    assert event_for_recheck(agent, outcome) == event
