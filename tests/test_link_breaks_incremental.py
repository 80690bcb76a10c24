"""The link reports' incremental refresh gives, step by step, exactly the record a full recompute gives:
a target goes dead and comes back, a new page links to a dead URL, a source page is re-crawled and
another deleted, a redirect chain's end fails, a page's #fragment anchors arrive after its fetch, new links
to a broken redirect and by a missing #fragment, a hop of a chain changing; and a busy crawl of healthy
pages adds nothing to what it looks at. On SQLite
here, on PostgreSQL through `manage.py shell` against a fresh database. The crawl is changed through its
own write paths (urls_transition, links inserted as rows), which leave the records the refresh reads."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from crawlcore.models import Link, Page, Server, Url
from crawlcore.services.urls import url_transition
from crawler.brokenlinks import MISSING_ANCHOR
from crawler.lifecycle import Agent, Event, State
from crawler.urlnorm import url_hash
from reports.models import LinkBreak
from reports.services import link_breaks_refresh

_COLUMNS = (
    "from_url_id", "to_url_id", "site_id", "anchor_text", "element", "status", "failure_kind", "redirect_chain",
    "first_broken_at", "last_checked_at", "fixed_at",
)  # fmt: skip


class _Undo(Exception):
    pass


def _record() -> list[tuple]:
    return sorted(LinkBreak.objects.values_list(*_COLUMNS))


def _refresh_both(now: datetime) -> tuple[list[tuple], list[tuple], object]:
    """The record a full recompute would leave (computed, then undone), and the one the incremental refresh
    leaves, from the same record before."""
    try:
        with transaction.atomic():
            link_breaks_refresh(now=now, full=True)
            full = _record()
            raise _Undo
    except _Undo:
        pass
    outcome = link_breaks_refresh(now=now)
    return full, _record(), outcome


def _url(server: Server, path: str, state: str = State.INIT.value, **fields) -> Url:
    url = f"{server.origin}{path}"
    return Url.objects.create(url=url, url_hash=url_hash(url), server=server, state=state, **fields)


def _move(url: Url, expected: State, event: Event, agent: Agent, **fields) -> None:
    assert url_transition(url_id=url.id, expected=expected, event=event, agent=agent, owner=None, **fields)


def _page(url: Url, *, anchors: str | None, extracted: bool = True) -> None:
    now = timezone.now()
    Page.objects.update_or_create(
        url=url,
        defaults={"body_z": b"", "checksum": str(url.id), "fetched_at": now, "anchors": anchors,
                  "extracted_at": now if extracted else None},
    )  # fmt: skip


def scenario() -> list[dict]:
    """Run the steps; each step's record by a full recompute and by the incremental refresh, and how the
    incremental one went. Needs an empty crawl database."""
    a = Server.objects.create(scheme="http", host="a.example", port=80)
    b = Server.objects.create(scheme="http", host="b.example", port=80)
    home, news = _url(a, "/", "visited"), _url(a, "/news", "visited")
    gone = _url(b, "/gone", "dead", last_status=404, failure_kind="http_status")
    later = _url(b, "/later", "visited", last_status=200)
    old = _url(b, "/old", "visited", last_status=301, redirect_to="http://b.example/mid")
    mid = _url(b, "/mid", "visited", last_status=302, redirect_to="http://b.example/end")
    end = _url(b, "/end", "visited", last_status=200)
    doc = _url(a, "/doc", "visited", last_status=200)
    _page(doc, anchors="intro\npart")
    Link.objects.bulk_create(
        [Link(from_url=home, to_url=t, anchor_text=f"to {t.url}", element="a href") for t in (gone, later, old)]
        + [Link(from_url=news, to_url=t, anchor_text=f"also to {t.url}", element="a href") for t in (gone, later, old)]
        + [
           Link(from_url=old, to_url=mid), Link(from_url=mid, to_url=end),  # the redirects, as the crawl records them
           Link(from_url=news, to_url=doc, element="a href", fragments="part\tPart\nlast\tLast")]
    )  # fmt: skip
    t = timezone.now()
    steps: list[dict] = []

    def step(name: str) -> None:
        full, got, outcome = _refresh_both(t + timedelta(minutes=5 * len(steps)))
        diff = [] if full == got else [sorted(set(full) - set(got)), sorted(set(got) - set(full))]
        opened = sum(r[-1] is None for r in got)
        steps.append({"step": name, "same": full == got, "full": outcome.full, "open": opened, "diff": diff,
                      "written": (outcome.new, outcome.changed, outcome.fixed), "urls": outcome.urls})  # fmt: skip

    step("first")  # a full one: nothing recorded yet
    _move(later, State.VISITED, Event.NO_RESPONSE, Agent.ACTIVE_SCAN, last_status=500, failure_kind="http_status")
    step("a target goes dead")
    _move(later, State.NO_RESPONSE_1, Event.RESPONDS, Agent.INACTIVE_SCAN, last_status=200, failure_kind="")
    step("it comes back")
    fresh = _url(a, "/fresh")
    _move(fresh, State.INIT, Event.FETCHED, Agent.LOAD, last_status=200)
    step("a new page is fetched, its links not extracted yet")
    Link.objects.create(from_url=fresh, to_url=gone, anchor_text="new link to a dead page", element="a href")
    step("its links are extracted: one to a dead URL")
    _move(news, State.VISITED, Event.UNCHANGED, Agent.ACTIVE_SCAN)
    step("a source page is re-crawled")
    Url.objects.filter(id=home.id).delete()
    step("a source page is deleted")
    _move(end, State.VISITED, Event.NO_RESPONSE, Agent.ACTIVE_SCAN, last_status=404, failure_kind="http_status")
    step("a redirect chain's end fails")
    _move(doc, State.VISITED, Event.CHANGED, Agent.ACTIVE_SCAN)
    _move(doc, State.INIT, Event.FETCHED, Agent.LOAD, last_status=200)
    _page(doc, anchors=None, extracted=False)
    step("a page linked by #fragment is fetched again")
    step("meanwhile nothing changes")  # the refresh after this one reads no URL move of the page any more
    _page(doc, anchors="intro")
    step("its anchors are extracted: one fragment names nothing now")
    _move(later, State.VISITED, Event.GONE, Agent.ACTIVE_SCAN, last_status=410, failure_kind="http_gone")
    step("a target is gone")
    # A busy crawl of healthy pages: fetched, linking to each other and to a healthy page. None of it is on
    # the broken side, so the refresh looks at no more URLs than before it.
    busy = [_url(a, f"/busy/{i}") for i in range(40)]
    for url in busy:
        _move(url, State.INIT, Event.FETCHED, Agent.LOAD, last_status=200)
    Link.objects.bulk_create(
        [Link(from_url=u, to_url=busy[(i + 1) % 40], element="a href") for i, u in enumerate(busy)]
        + [Link(from_url=u, to_url=news, element="a href") for u in busy]
    )  # fmt: skip
    step("a busy crawl of healthy pages")
    Link.objects.create(from_url=busy[0], to_url=old, anchor_text="to an old redirect", element="a href")
    step("a page links to a redirect whose chain ends broken")
    Link.objects.create(from_url=busy[1], to_url=doc, element="a href", fragments="gone\tGone")
    step("a new link by #fragment to a page without that anchor")
    _move(end, State.NO_RESPONSE_1, Event.RESPONDS, Agent.INACTIVE_SCAN, last_status=200, failure_kind="")
    step("the chain's end answers again")
    _move(mid, State.VISITED, Event.UNCHANGED, Agent.ACTIVE_SCAN, last_status=200, redirect_to="", failure_kind="")
    _move(end, State.VISITED, Event.NO_RESPONSE, Agent.ACTIVE_SCAN, last_status=500, failure_kind="http_status")
    step("a hop of the chain stops redirecting; its old end fails")
    _move(mid, State.VISITED, Event.UNCHANGED, Agent.ACTIVE_SCAN, last_status=302, redirect_to="http://b.example/later")
    step("the hop redirects again, to a gone page")
    return steps


def _check(steps: list[dict]) -> None:
    assert [s["step"] for s in steps if not s["same"]] == [], steps
    assert [s["full"] for s in steps] == [True] + [False] * (len(steps) - 1)
    opened = {s["step"]: s["open"] for s in steps}
    written = {s["step"]: tuple(s["written"]) for s in steps}  # (new, changed, fixed); a list through JSON
    # The steps do change the record: the equality above is not that of two records left alone.
    assert list(opened.values()) == [3, 5, 3, 3, 4, 4, 3, 4, 3, 3, 4, 5, 5, 6, 7, 5, 6, 7], opened
    assert written["a source page is re-crawled"] == (0, 2, 0)  # its breaks' last check
    assert written["a source page is deleted"] == (0, 0, 1)
    # Two links through it broken; its own link to the old end a hop again.
    assert written["the hop redirects again, to a gone page"] == (2, 0, 1)
    # The refresh follows the broken side: forty healthy pages fetched, with eighty links, add no URL to look at.
    urls = {s["step"]: s["urls"] for s in steps}
    assert urls["a busy crawl of healthy pages"] <= urls["a target is gone"], urls


def test_incremental_refresh_equals_a_full_one_step_by_step(db):
    _check(scenario())


def test_nothing_moved_reads_nothing_and_any_move_reads_the_open_breaks_through_redirects(db):
    scenario()
    later = timezone.now() + timedelta(hours=2)
    link_breaks_refresh(now=later)  # still reads the moves the refresh before it read (they may have been late)
    outcome = link_breaks_refresh(now=later + timedelta(minutes=5))
    assert outcome.unchanged and (outcome.full, outcome.urls) == (False, 0)
    # A hop further along their chains may move without a trace on the head: once anything moved, their
    # heads are read again (here a healthy page fetched, the only URL that moved).
    fresh = _url(Server.objects.get(host="a.example"), "/fresh-again")
    _move(fresh, State.INIT, Event.FETCHED, Agent.LOAD, last_status=200)
    outcome = link_breaks_refresh(now=later + timedelta(minutes=10))
    heads = set(LinkBreak.objects.filter(fixed_at=None).exclude(redirect_chain="")
                .exclude(failure_kind=MISSING_ANCHOR).values_list("to_url_id", flat=True))  # fmt: skip
    assert heads
    assert (outcome.full, outcome.urls, outcome.new, outcome.changed, outcome.fixed) == (False, len(heads), 0, 0, 0)
    assert not outcome.unchanged


def test_a_change_of_settings_recomputes_everything(db, settings):
    scenario()
    settings.CRAWL_CHECK_FRAGMENTS = "off"
    outcome = link_breaks_refresh(now=timezone.now() + timedelta(hours=2))
    assert outcome.full and outcome.fixed == 2  # the two missing anchors are not reported any more


SCENARIO = """
import json
from tests.test_link_breaks_incremental import scenario
print(json.dumps(scenario(), default=str))
"""


@pytest.mark.integration
def test_incremental_refresh_equals_a_full_one_on_postgres(tmp_path):
    from testweb.cluster import manage, postgres_database

    with postgres_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "link-breaks-test-" * 4,
               "CRAWLADMIN_DATA_DIR": str(tmp_path)}  # fmt: skip
        manage(env, "migrate", "--verbosity", "0")
        _check(json.loads(manage(env, "shell", "-c", SCENARIO).stdout.strip().splitlines()[-1]))
