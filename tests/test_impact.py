"""Broken links by impact: `dead_links --sort impact` orders them by the summed stored BlockRank of the pages
that carry them (column `impact`), so the links on pages people reach come first; owners' digests lead
with them."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from crawlcore.models import Link, Server, Url
from crawler.urlnorm import url_hash
from ranking.models import PageRank
from reports.digests import digests_send
from reports.models import Digest
from reports.selectors import EXPORT_COLUMNS, link_breaks_open
from reports.services import link_breaks_refresh


def _url(server: Server, path: str, state: str = "visited", **fields) -> Url:
    url = f"{server.origin}{path}"
    return Url.objects.create(url=url, url_hash=url_hash(url), server=server, state=state, **fields)


def _rank(url: Url, rank: float) -> None:
    PageRank.objects.create(url=url, server_id=url.server_id, page_id=0, site_id=0, domain_id=0, community_id=0,
                            domain="", community="", rank=rank, local_rank=rank, block_rank=1.0,
                            computed_at=timezone.now())  # fmt: skip


@pytest.fixture
def broken(db):
    """Three pages with broken links: the home page (rank 0.5) links to /gone; two leaves (0.1 each) link to
    /lost; a page never ranked links to /missing."""
    server = Server.objects.create(scheme="http", host="a.example", port=80, owner_name="Ana",
                                   owner_email="ana@a.example")  # fmt: skip
    home, leaf1, leaf2, lone = (_url(server, p) for p in ("/", "/l1", "/l2", "/lone"))
    _rank(home, 0.5)
    _rank(leaf1, 0.1)
    _rank(leaf2, 0.1)
    dead = {p: _url(server, p, state="dead", last_status=404, failure_kind="http_status")
            for p in ("/gone", "/lost", "/missing")}  # fmt: skip
    for src, dst in ((leaf1, "/lost"), (leaf2, "/lost"), (lone, "/missing"), (home, "/gone")):
        Link.objects.create(from_url=src, to_url=dead[dst], anchor_text=dst, element="a href")
    link_breaks_refresh(now=timezone.now() - timedelta(hours=1))
    return server


def test_breaks_by_impact_sum_the_ranks_of_the_pages_carrying_each_target(broken):
    rows = list(link_breaks_open(sort="impact").values_list("from_url__url", "to_url__url", "impact"))
    assert [(src.removeprefix("http://a.example"), dst.removeprefix("http://a.example")) for src, dst, _ in rows] == [
        ("/", "/gone"), ("/l1", "/lost"), ("/l2", "/lost"), ("/lone", "/missing"),
    ]  # fmt: skip
    assert [impact for *_, impact in rows] == pytest.approx([0.5, 0.2, 0.2, 0.0])


def test_dead_links_sort_impact_adds_the_impact_column_and_orders_by_it(broken, capsys):
    call_command("dead_links", "--sort", "impact", "--format", "csv", "--no-refresh")
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == [*EXPORT_COLUMNS, "impact"]
    assert rows[1][2] == "http://a.example/" and float(rows[1][-1]) == pytest.approx(0.5)
    assert [float(r[-1]) for r in rows[1:]] == sorted((float(r[-1]) for r in rows[1:]), reverse=True)
    call_command("dead_links", "--format", "csv", "--no-refresh")
    assert next(csv.reader(io.StringIO(capsys.readouterr().out))) == list(EXPORT_COLUMNS)  # the default is unchanged


def test_a_bad_sort_is_refused(broken):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("dead_links", "--sort", "rank", stdout=io.StringIO())


def test_the_owners_digest_leads_with_the_links_to_fix_first(broken, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    assert digests_send().sent == 1
    body = Digest.objects.get().body
    first = body.index("Fix these first")
    assert first < body.index("Broke (")
    assert body.index("http://a.example/gone", first) < body.index("http://a.example/lost", first)


def test_a_sites_dead_link_page_lists_what_to_fix_first(broken, client):
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user("v", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    page = client.get(f"/dashboard/dead-links/{broken.id}/").content.decode()
    first = page.index("Fix these first")
    assert page.index("http://a.example/gone", first) < page.index("http://a.example/lost", first)
    assert "0.5000" in page
