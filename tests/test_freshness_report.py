"""`manage.py freshness_report` and `GET /api/v1/freshness/`: the same figures, CSV columns exactly as the issue
names them, the API scoped to the reader's server groups and in the OpenAPI schema."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from crawlcore.models import Server
from crawlcore.services.freshness import freshness_save
from tests.test_api_v1 import _call, _user
from tests.test_freshness_objectives import _changes, site

pytestmark = pytest.mark.django_db

COLUMNS = ("objective,site,pages,p50_staleness_s,p95_staleness_s,target_s,met,hours_met_pct,budget,budget_needed,"
           "lastmod_honesty")  # fmt: skip


def _two_objectives() -> None:
    fast = site("a.example", pages=4)
    for url_id in fast.values():
        _changes(url_id, checks=10, changed=10, every=600)
    site("b.example", pages=3, checked_ago=60)
    Server.objects.filter(host="a.example").update(group="physics")
    Server.objects.filter(host="b.example").update(group="chemistry")
    from crawlcore.models import Url

    Url.objects.filter(id__in=fast.values()).update(last_checked_at=timezone.now() - timedelta(hours=3))
    freshness_save(spec={"name": "a-tight", "site": "http://a.example", "pages": "all", "target": 600, "budget": 5})
    freshness_save(spec={"name": "b-easy", "site": "http://b.example", "pages": "all", "target": 86400, "budget": 500})


def _report(*args: str) -> str:
    out = io.StringIO()
    call_command("freshness_report", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_csv_has_the_issues_columns_and_a_row_an_objective():
    _two_objectives()
    text = _report("--format", "csv")
    assert text.splitlines()[0] == COLUMNS
    rows = {r["objective"]: r for r in csv.DictReader(io.StringIO(text))}
    assert rows["a-tight"]["met"] == "no" and rows["b-easy"]["met"] == "yes"
    assert int(rows["a-tight"]["budget_needed"]) > 5
    assert float(rows["a-tight"]["p95_staleness_s"]) > 600 > float(rows["b-easy"]["p95_staleness_s"])
    assert rows["b-easy"]["site"] == "http://b.example"


def test_the_table_says_which_objective_is_unattainable_and_json_has_the_same_figures():
    _two_objectives()
    table = _report()
    assert "a-tight: unattainable at 5 requests/server/day; needs" in table
    assert "b-easy: unattainable" not in table
    rows = {r["objective"]: r for r in json.loads(_report("--format", "json"))}
    assert rows["a-tight"]["attainable"] is False and rows["b-easy"]["attainable"] is True


def test_api_lists_what_the_reader_may_see_with_the_reports_figures():
    _two_objectives()
    _, token = _user("p", "viewer", "servers:physics")
    code, body = _call("get", "/api/v1/freshness/", token)
    assert code == 200 and [r["objective"] for r in body["freshness"]] == ["a-tight"]
    report = {r["objective"]: r for r in json.loads(_report("--format", "json"))}
    assert body["freshness"][0]["budget_needed"] == report["a-tight"]["budget_needed"]
    _, admin = _user("root", superuser=True)
    assert [r["objective"] for r in _call("get", "/api/v1/freshness/", admin)[1]["freshness"]] == ["a-tight", "b-easy"]
    assert _call("get", "/api/v1/freshness/")[0] == 401


def test_the_schema_describes_the_freshness_list():
    _, token = _user("v", "viewer")
    code, body = _call("get", "/api/v1/schema", token)
    assert code == 200 and "/api/v1/freshness/" in body["paths"]
    props = body["components"]["schemas"]["FreshnessRow"]["properties"]
    assert set(COLUMNS.split(",")) <= set(props)


def test_the_dashboard_page_shows_each_visible_objective_with_its_figures_chart_and_stalest_pages(client):
    from django.contrib.auth.models import Group, User

    from crawlcore.models import FreshnessHour, FreshnessObjective

    _two_objectives()
    obj = FreshnessObjective.objects.get(name="a-tight")
    FreshnessHour.objects.create(objective=obj, hour=timezone.now() - timedelta(hours=2), met=False)
    user = User.objects.create_user("p", password="unused-pw-1")
    for name in ("viewer", "servers:physics"):
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    client.force_login(user)
    page = client.get("/dashboard/freshness/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "a-tight" in html and "b-easy" not in html  # the reader's groups only
    assert "unattainable at its budget" in html and "target missed" in html
    assert "target held 0 of 1 hours" in html  # the 30-day bar
    assert "http://a.example/p" in html  # the stalest pages
    assert 'href="/dashboard/freshness/"' in client.get("/dashboard/").content.decode()  # in the navigation
