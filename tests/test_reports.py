"""Link reports by single steps: what counts as broken, the record of breaks over time, the
owners' digests, and what the extract agent records of a link not followed."""

from __future__ import annotations

import zlib
from datetime import timedelta

import pytest
from django.utils import timezone

from crawlcore.models import Link, Page, Server, Url
from crawlcore.services.extract import pages_extract
from crawlcore.services.urls import url_transition
from crawler.brokenlinks import Hop, fragment_missing, neutralised, verdict_of
from crawler.lifecycle import Agent, Event, State
from crawler.urlnorm import url_hash
from reports.digests import digests_send
from reports.models import Digest, LinkBreak
from reports.services import link_breaks_refresh

FAILING = frozenset({"noresponse1", "noresponse2", "dead"})


def test_redirect_chain_ending_in_a_404_is_broken_and_shown():
    hops = {1: Hop("http://a/old", "visited", 301, "", 2), 2: Hop("http://a/new", "noresponse1", 404, "http_status")}
    verdict = verdict_of(1, hops, FAILING, 5)
    assert (verdict.status, verdict.chain) == (404, ("http://a/old [301]", "http://a/new [404]"))
    assert verdict_of(1, {**hops, 2: Hop("http://a/new", "visited", 200, "")}, FAILING, 5) is None


def test_redirect_loop_is_broken_and_an_unchecked_end_is_not():
    loop = {1: Hop("http://a/x", "visited", 302, "", 2), 2: Hop("http://a/y", "visited", 302, "", 1)}
    assert verdict_of(1, loop, FAILING, 5).failure_kind == "redirect loop"
    assert (
        verdict_of(1, {1: Hop("http://a/x", "visited", 302, "", 2), 2: Hop("http://b/", "init", None, "")}, FAILING, 5)
        is None
    )


@pytest.mark.parametrize(
    ("fragment", "anchors", "missing"),
    [("team", "team\nhistory", False), ("nowhere", "team", True), ("top", "", False), ("Caf%C3%A9", "Café", False),
     ("x", None, False), (":~:text=hello", "team", False)],
)  # fmt: skip
def test_fragment_check(fragment, anchors, missing):
    assert fragment_missing(fragment, anchors) is missing


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\tx"])
def test_formula_prefixes_are_neutralised(text):
    assert neutralised(text) == "'" + text and neutralised("plain - text") == "plain - text"


def _url(server: Server, path: str, state: str = "visited", **fields) -> Url:
    url = f"{server.origin}{path}"
    return Url.objects.create(url=url, url_hash=url_hash(url), server=server, state=state, **fields)


@pytest.fixture
def owned(db):
    server = Server.objects.create(
        scheme="http", host="a.example", port=80, owner_name="Ana", owner_email="ana@a.example"
    )
    home = _url(server, "/")
    dead = _url(server, "/dead", state="dead", last_status=404, failure_kind="http_status")
    Link.objects.create(from_url=home, to_url=dead, anchor_text="Gone", element="a href")
    return server, home, dead


def test_refresh_records_first_seen_then_fixed_then_broken_again(owned):
    _, home, dead = owned
    t0 = timezone.now()
    assert link_breaks_refresh(now=t0).new == 1
    again = link_breaks_refresh(now=t0 + timedelta(minutes=5))
    assert (again.new, again.fixed) == (0, 0) and LinkBreak.objects.get().first_broken_at == t0
    # Through the crawl's own write path, which records each move (what the refresh reads).
    move = {"url_id": dead.id, "owner": None}
    assert url_transition(**move, expected=State.DEAD, event=Event.REVIVE, agent=Agent.ADMIN)
    assert link_breaks_refresh(now=t0 + timedelta(minutes=10)).fixed == 1
    again_at = t0 + timedelta(minutes=12)
    assert url_transition(**move, expected=State.INIT, event=Event.NO_RESPONSE, agent=Agent.LOAD, now=again_at)
    assert link_breaks_refresh(now=t0 + timedelta(minutes=15)).new == 1
    row = LinkBreak.objects.get()
    assert (row.fixed_at, row.first_broken_at, row.anchor_text) == (None, again_at, "Gone")


def test_digest_tells_each_owner_what_broke_and_was_fixed_once(owned, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    _, _, dead = owned
    t0 = timezone.now()
    assert digests_send(now=t0).sent == 1
    digest = Digest.objects.get()
    assert (digest.owner_email, digest.broken, digest.fixed, digest.channel) == ("ana@a.example", 1, 0, "file")
    assert '"Gone" -> http://a.example/dead' in (tmp_path / "digests").joinpath(digest.destination).read_text()
    assert digests_send(now=t0 + timedelta(days=7)).skipped == 1  # nothing new: nothing sent
    assert url_transition(url_id=dead.id, owner=None, expected=State.DEAD, event=Event.REVIVE, agent=Agent.ADMIN)
    assert digests_send(now=t0 + timedelta(days=14)).sent == 1
    assert Digest.objects.order_by("-sent_at").first().fixed == 1


def test_links_not_followed_keep_their_reason_and_are_lifted_when_followed(db, settings, monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    settings.CRAWL_OBEY_NOFOLLOW = True
    settings.CRAWL_MAX_DEPTH = 3
    server = Server.objects.create(scheme="http", host="b.example", port=80)
    deep = _url(server, "/deep", depth=3)
    body = b'<a rel="nofollow" href="/nf">n</a><a href="/next">next</a><img src="/i.png" alt="I">'
    page = Page.objects.create(url=deep, body_z=zlib.compress(body), checksum="x", fetched_at=timezone.now())
    pages_extract(page_ids=[page.id])
    reasons = dict(Url.objects.exclude(id=deep.id).values_list("url", "exclusion_reason"))
    assert reasons == {
        "http://b.example/nf": "nofollow",
        "http://b.example/next": "too deep",
        "http://b.example/i.png": "",
    }
    link = Link.objects.get(to_url__url="http://b.example/nf")
    assert (link.nofollow, link.element, link.anchor_text) == (True, "a href", "n")
    shallow = _url(server, "/shallow", depth=0)
    page = Page.objects.create(
        url=shallow, body_z=zlib.compress(b'<a href="/next">n</a>'), checksum="y", fetched_at=timezone.now()
    )
    pages_extract(page_ids=[page.id])
    lifted = Url.objects.get(url="http://b.example/next")
    assert (lifted.exclusion_reason, lifted.depth, lifted.next_check_at is not None) == ("", 1, True)


def test_not_followed_counts_per_site(db):
    from crawlcore.selectors import crawl_summary

    server = Server.objects.create(scheme="http", host="c.example", port=80)
    for path, reason in [
        ("/r", "robots.txt"),
        ("/o", "out of scope"),
        ("/p", "private address: 10.0.0.0/8"),
        ("/a", "alias of x"),
    ]:
        _url(server, path, state="init", exclusion_reason=reason, scope_root="c.example")
    excluded = Server.objects.create(scheme="http", host="d.example", port=80, excluded_reason="alias of x")
    _url(excluded, "/known-before", state="init", scope_root="c.example")
    counts = crawl_summary(checks=False)["not_followed"]
    assert counts == {"c.example": {"out of scope": 1, "private address": 1, "robots.txt": 1, "server excluded": 2}}


def test_digest_goes_by_email_when_email_is_configured(owned, settings, tmp_path):
    from django.core import mail

    settings.DATA_DIR = tmp_path
    settings.EMAIL_HOST = "smtp.example"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert digests_send().sent == 1
    (message,) = mail.outbox
    assert message.to == ["ana@a.example"] and '"Gone" -> http://a.example/dead' in message.body
    digest = Digest.objects.get()
    assert (digest.channel, digest.destination) == ("email", "ana@a.example")
    assert not (tmp_path / "digests").exists()


def test_import_servers_takes_the_owner_name(db, tmp_path):
    from django.core.management import call_command

    csv = tmp_path / "servers.csv"
    csv.write_text("127.0.0.5,campus,,,,,web@campus.example,Web Office\n127.0.0.6,lab\n")
    call_command("import_servers", "--trusted", str(csv))
    assert dict(Server.objects.values_list("host", "owner_name")) == {"127.0.0.5": "Web Office", "127.0.0.6": ""}
