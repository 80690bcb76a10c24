"""An outage's evidence end to end, as an operator runs it (subprocesses on embedded SQLite, the web app on a
loopback port, a real `json://` receiver, pywb): a page never seen before answers 200, is crawled and checked,
then answers 500 with a body of words made up for this run. Once the monitor confirms it:

* the alert the receiver gets quotes the first words of that body, with the status;
* `GET /api/v1/incidents/ID/` gives the evidence: status, headers (the session cookie masked), the body's
  text, the timings by phase, the location's verdict, the last good answer and what differs; a viewer of
  another server group gets a 404;
* the public status page shows the incident and none of the body;
* `export_warc --incidents` holds the failing 500 as a response record (with its request) and the last good
  capture's 200, and pywb replays both."""

from __future__ import annotations

import json
import random
import urllib.error
import urllib.request
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from testweb.alerts import free_port, webhook_receiver
from testweb.evidence import turning_page
from testweb.pywb import Pywb

from .crawlcheck import clean_env, run_crawl
from .test_alerts_monitor_kinds import manage, web_app

WORDS = ("amber", "quartz", "lantern", "orbit", "velvet", "harbor", "cobalt", "meadow", "falcon", "ember")


def _call(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _token(env: dict[str, str], user: str) -> str:
    out = manage(env, "api_token", user).stdout
    return next(w for w in out.split() if w.startswith("ca_"))


def test_a_confirmed_500_keeps_its_evidence_alerts_with_it_and_archives_beside_the_last_good(tmp_path: Path):
    rng = random.Random()
    phrase = " ".join(rng.choice(WORDS) for _ in range(6)) + f" {rng.randrange(10**6, 10**7)}"
    failing = f"{phrase}: the upstream pool is exhausted\n".encode() + b"x" * 200
    cookie = f"s{rng.randrange(10**9)}cret"
    host = f"127.0.0.{rng.randrange(150, 200)}"
    port = free_port()
    env = clean_env(
        CRAWLADMIN_DATA_DIR=str(tmp_path), MONITOR_RETRIES="0", MONITOR_FAIL_AFTER="2",
        ALERTS_BASE_URL=f"http://127.0.0.1:{port}", ARCHIVE_REPLAY_URL="http://replay.invalid/crawl/",
    )  # fmt: skip
    manage(env, "migrate", "-v0")
    good = b"<html><head><title>fine</title></head><body><p>all is well here</p></body></html>"
    with webhook_receiver() as rx, turning_page(host, good, cookie) as page:
        url = f"{page.origin}/"
        manage(env, "add_monitor", "http", url, "--name", "shop", "--group", "campus")
        run_crawl(env, url)  # the crawl's stored copy: the last good capture
        manage(env, "add_channel", "ops", f"{rx.base}/ops", "--events", "down")
        manage(env, "check_servers")  # the monitor's last normal check
        page.fail(500, failing)
        for _ in range(2):  # MONITOR_FAIL_AFTER=2: the second failed round confirms it
            manage(env, "check_servers")
    # -- the alert
    events = [e for r in rx.received for e in r.body["events"]]
    assert [e["kind"] for e in events] == ["down"]
    answered = events[0]["answered"]
    assert answered.startswith("answered 500") and phrase in answered, answered
    assert "slowest phase" in answered and len(answered) < 420
    assert events[0]["incident_url"].startswith(f"http://127.0.0.1:{port}/dashboard/incidents/")

    manage(env, "shell", "-c", (
        "from django.contrib.auth.models import Group, User\n"
        "from dashboard.models import StatusPage\n"
        "for name, scope in (('campus_viewer', 'servers:campus'), ('other_viewer', 'servers:physics')):\n"
        "    u = User.objects.create_user(name, password='unused-pw-1')\n"
        "    u.groups.add(Group.objects.get_or_create(name='viewer')[0], Group.objects.get_or_create(name=scope)[0])\n"
        "StatusPage.objects.create(slug='campus', group='campus')\n"
    ))  # fmt: skip
    mine, other = _token(env, "campus_viewer"), _token(env, "other_viewer")
    web = web_app(env, port)
    try:
        base = f"http://127.0.0.1:{port}"
        code, body = _call(f"{base}/api/v1/incidents/", mine)
        assert code == 200, body[:500]
        listed = json.loads(body)["incidents"]
        assert len(listed) == 1
        incident_id = listed[0]["id"]
        assert events[0]["incident_url"].endswith(f"/dashboard/incidents/{incident_id}/")
        code, body = _call(f"{base}/api/v1/incidents/{incident_id}/", mine)
        assert code == 200, body[:500]
        ev = json.loads(body)["evidence"]
        assert ev["status_code"] == 500 and ev["content_type"] == "text/plain; charset=utf-8"
        assert ev["body_excerpt"].startswith(phrase)
        assert set(ev["timings_ms"]) == {"dns", "connect", "tls", "first_byte", "body", "total"}
        assert ev["timings_ms"]["total"] > 0 and ev["timings_ms"]["first_byte"] is not None
        assert ev["timings_ms"]["tls"] is None  # plain http: no handshake
        assert ev["headers"]["server"] == "broken/2.0"
        assert ev["headers"]["set-cookie"].startswith("session=****") and cookie not in body.decode()
        assert ev["locations"] == [{"location": None, "verdict": "error", "status_code": 500}]
        assert ev["last_good"]["status_code"] == 200 and ev["last_good"]["url"] == url
        assert ev["last_good"]["replay"].startswith("http://replay.invalid/crawl/")
        assert "status 200 → 500" in ev["difference"] and "server good/1.0 → broken/2.0" in ev["difference"]
        assert _call(f"{base}/api/v1/incidents/{incident_id}/", other)[0] == 404
        assert json.loads(_call(f"{base}/api/v1/incidents/", other)[1])["incidents"] == []

        code, public = _call(f"{base}/status/campus/")
        assert code == 200 and b"shop" in public
        assert phrase.split()[0].encode() not in public and b"upstream pool" not in public
    finally:
        web.terminate()
        web.wait(timeout=30)

    # -- the archive
    out = tmp_path / "incidents.warc.gz"
    manage(env, "export_warc", str(out), "--incidents", "--no-progress")
    with out.open("rb") as f:
        records = [(r, r.content_stream().read()) for r in ArchiveIterator(f)]
    responses = {}
    for r, payload in records:
        if r.rec_type == "response":
            assert r.rec_headers.get_header("WARC-Target-URI") == url  # nothing but the incident's URL
            responses[r.http_headers.get_statuscode()] = (r.rec_headers.get_header("WARC-Date"), payload)
    assert set(responses) == {"200", "500"}
    assert responses["500"][1] == failing and responses["200"][1] == good
    requests = [r for r, _ in records if r.rec_type == "request"]
    assert len(requests) == 2
    # The evidence's heads have the session masked (the crawl's own capture keeps its heads as they came).
    failing_head = next(
        str(r.http_headers) for r, _ in records if r.rec_type == "response" and r.http_headers.get_statuscode() == "500"
    )
    assert "session=****" in failing_head and cookie not in failing_head

    with Pywb(tmp_path / "pywb", [out]) as pywb:
        for status, (date, payload) in responses.items():
            stamp = date.replace("-", "").replace(":", "").replace("T", "")[:14]
            replayed = pywb.get(url, timestamp=stamp)
            assert (replayed.status_code, replayed.content) == (int(status), payload), (status, pywb.log())
