"""The dashboard's rollups on real PostgreSQL: the broken-link upsert and its difference, the snapshots,
the check totals against an exact count, and the advisory lock that keeps one refresh at a time —
through `manage.py dashboard_refresh` in a subprocess against a fresh database."""

from __future__ import annotations

import json
import os

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

# Two servers; a.example's home page links to a Dead URL, a NoResponse1 URL, a live URL and an excluded
# Dead one; old and recent checks.
MAKE_CRAWL = """
from datetime import timedelta
from django.utils import timezone
from crawlcore.models import Link, Server, StatusCheck, Url
from crawler.urlnorm import url_hash
a = Server.objects.create(scheme="http", host="a.example", port=80)
b = Server.objects.create(scheme="http", host="b.example", port=80)
def url(server, path, state, reason=""):
    u = f"http://{server.host}{path}"
    return Url.objects.create(url=u, url_hash=url_hash(u), server=server, state=state,
                              exclusion_reason=reason)
home = url(a, "/", "visited")
targets = [url(b, "/gone", "dead"), url(b, "/slow", "noresponse1"), url(b, "/", "visited"),
           url(b, "/robots", "dead", "robots.txt")]
Link.objects.bulk_create([Link(from_url=home, to_url=t) for t in targets])
now = timezone.now()
for i, category in enumerate(["normal"] * 5 + ["error"] * 2 + ["delay"]):
    StatusCheck.objects.create(server=a, requested_url="http://a.example/", category=category, latency_ms=5,
                               agent="monitor", checked_at=now - timedelta(hours=3 - i * 0.3))
"""

# Through the crawl's write path, which records each move (what the dead-link refresh reads).
CHANGE_CRAWL = """
from crawlcore.models import Url
from crawlcore.services.urls import url_transition
from crawler.lifecycle import Agent, Event, State
def move(url, expected, event, agent):
    assert url_transition(url_id=Url.objects.get(url=url).id, expected=expected, event=event, agent=agent, owner=None)
move("http://b.example/slow", State.NO_RESPONSE_1, Event.RESPONDS, Agent.INACTIVE_SCAN)
move("http://b.example/", State.VISITED, Event.NO_RESPONSE, Agent.ACTIVE_SCAN)
move("http://b.example/", State.NO_RESPONSE_1, Event.NO_RESPONSE, Agent.INACTIVE_SCAN)
"""

SUMMARY = """
import json
from crawlcore.selectors import crawl_summary
from dashboard.selectors_crawl import summary_counts
got, expected = summary_counts(), crawl_summary()
print(json.dumps({"same": {k: got[k] for k in expected} == expected, "checks": got["checks"]}))
"""


def _rows(url: str, sql: str) -> list[tuple]:
    import psycopg2

    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def test_refresh_on_postgres_writes_the_difference_and_runs_once_at_a_time(tmp_path):
    import psycopg2

    with postgres_database() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "dashboard-test-" * 4,
            "CRAWLADMIN_DATA_DIR": str(tmp_path),
        }
        manage(env, "migrate", "--verbosity", "0")
        manage(env, "shell", "-c", MAKE_CRAWL)
        first = json.loads(manage(env, "dashboard_refresh", "--json").stdout)
        assert first["dead_links"]["changed"] == 2 and first["rollups"]["servers"] == 2
        broken = (
            "SELECT t.url, t.state FROM reports_linkbreak b JOIN crawladmin_url t ON t.id = b.to_url_id"
            " WHERE b.fixed_at IS NULL"
        )
        assert sorted(_rows(url, broken)) == [
            ("http://b.example/gone", "dead"),
            ("http://b.example/slow", "noresponse1"),
        ]
        totals = _rows(url, "SELECT data FROM dashboard_snapshot WHERE name = 'check_totals'")[0][0]
        assert totals["categories"] == {"normal": 5, "delay": 1, "disconnect": 0, "error": 2}

        manage(env, "shell", "-c", CHANGE_CRAWL)
        second = json.loads(manage(env, "dashboard_refresh", "--json").stdout)
        assert (second["dead_links"]["removed"], second["dead_links"]["changed"]) == (1, 1)
        assert sorted(_rows(url, broken)) == [("http://b.example/", "noresponse2"), ("http://b.example/gone", "dead")]
        summary = json.loads(manage(env, "shell", "-c", SUMMARY).stdout.strip().splitlines()[-1])
        assert summary["same"] and summary["checks"]["normal"] == 5

        # A refresh already running (we hold its advisory lock): the next one skips instead of queueing.
        holder = psycopg2.connect(url)
        try:
            with holder.cursor() as cur:
                cur.execute("SELECT pg_advisory_lock(hashtext('crawladmin.dashboard:dead_links'))")
            skipped = json.loads(manage(env, "dashboard_refresh", "--json").stdout)
            assert skipped["dead_links"] == {"skipped": "another refresh is running"}
        finally:
            holder.close()


CHART = """
import json, math
from datetime import timedelta
from django.utils import timezone
from crawlcore.models import Server
from dashboard.selectors_server import server_latency_chart, server_latency_series
from monitoring.models import HourlyRollup
from monitoring.selectors import hour_floor
a = Server.objects.get(host="a.example")
top = hour_floor(timezone.now())
HourlyRollup.objects.bulk_create([
    HourlyRollup(server=a, hour=top - timedelta(hours=h), timed=1, latency_mean_ms=10 + h / 7,
                 latency_p95_ms=None if h % 5 == 0 else 100 + h / 3, latency_max_ms=1000 + h * 1.234)
    for h in range(0, 200, 3)
])
out = {}
for name in ("24h", "7d", "30d"):
    chart = server_latency_chart(server_id=a.id, range_name=name)
    series = server_latency_series(server_id=a.id, range_name=name)
    data = json.loads(chart.json)
    same = data["labels"] == series["labels"] and data["kind"] == series["kind"] == chart.kind
    for key, values in series["series"].items():
        got = data["series"][key]
        same = same and len(got) == len(values) and all(
            (x is None and y is None) or (x is not None and y is not None and math.isclose(x, y, abs_tol=0.1001))
            for x, y in zip(got, values))
    out[name] = {"points": chart.points, "labels": len(series["labels"]), "same": same,
                 "script_safe": "<" not in chart.json}
print(json.dumps(out))
"""


def test_latency_chart_json_built_by_postgres_matches_the_python_series(tmp_path):
    with postgres_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "dashboard-test-" * 4,
               "CRAWLADMIN_DATA_DIR": str(tmp_path)}
        manage(env, "migrate", "--verbosity", "0")
        manage(env, "shell", "-c", MAKE_CRAWL)
        out = json.loads(manage(env, "shell", "-c", CHART).stdout.strip().splitlines()[-1])
        # 24 h holds the hours 0, 3, … 21 (8 rollups); 7 d 56; 30 d all 67.
        assert {name: (o["points"], o["labels"]) for name, o in out.items()} == {
            "24h": (8, 8), "7d": (56, 56), "30d": (67, 67)}
        assert all(o["same"] and o["script_safe"] for o in out.values()), out
