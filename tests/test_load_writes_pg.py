"""The load agent's group write on real PostgreSQL (crawlcore.db.chain): a group of fetched pages is recorded
in ONE statement — the checks' outcomes, the guarded moves to Visited with their events, the pages — and
keeps every guarantee of the step-by-step path: a URL another owner took is not moved and gets no event or
page (its check is still recorded), a resource gets no page, a value the database refuses falls back to one
by one so only that page is classified; a resource's answer is kept for the archive. Through
`manage.py shell` against a fresh database."""

from __future__ import annotations

import json
import os

import pytest

from crawler.urlnorm import url_hash
from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration


def _run(tmp_path, script: str, **settings: str) -> dict:
    """`script` through `manage.py shell` against a fresh, migrated database; the JSON of its last line."""
    with postgres_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "t-key-" * 9,
               "CRAWLADMIN_DATA_DIR": str(tmp_path), **settings}  # fmt: skip
        manage(env, "migrate", "--verbosity", "0")
        return json.loads(manage(env, "shell", "-c", script).stdout.strip().splitlines()[-1])


FLUSH = """
import json
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from crawlcore.models import Exchange, Page, Server, StatusCheck, Url, UrlEvent
from crawlcore.services.request_records import check_begin
from crawlcore.services.load import LoadBatch
from crawlcore.services.urls import urls_claim
from crawlcore.services.visit import ServerVisit
from crawler.http import FetchResult, Timings
from crawler.lifecycle import Agent
from crawler.urlnorm import url_hash

server = Server.objects.create(scheme="http", host="a.example", port=80)
paths = ["/a", "/b", "/taken", "/logo.png", "/bad"]
for p in paths:
    u = f"http://a.example{p}"
    Url.objects.create(url=u, url_hash=url_hash(u), server=server, state="init",
                       next_check_at=timezone.now(), resource=p.endswith(".png"))
claimed = {c.url.rsplit("/", 1)[1]: c for c in urls_claim(server_id=server.id, owner="me", limit=10)}
Url.objects.filter(url="http://a.example/taken").update(lease_owner="someone else")  # lost its lease meanwhile

def result(c, *, content_type="text/html"):
    check_id = check_begin(server_id=server.id, requested_url=c.url, method="GET", agent=Agent.LOAD)
    return FetchResult(url=c.url, method="GET", status=200, headers={"content-type": content_type},
                       body=f"<html><title>{c.url}</title></html>".encode(), failure=None, detail="",
                       truncated=False, bytes_received=40, timings=Timings(1.0, 2.0, 3.0, 4.0, 10.0),
                       peer_ip="127.0.0.1", check_id=check_id, request_head="GET / HTTP/1.1",
                       response_head="HTTP/1.1 200")

batch = LoadBatch(ServerVisit(server, "me", Agent.LOAD))
batch.pending = dict.fromkeys(c.id for c in claimed.values())
batch.fetched = [(claimed[n], result(claimed[n])) for n in ("a", "b", "taken")]
batch.fetched.append((claimed["logo.png"], result(claimed["logo.png"], content_type="image/png")))
with CaptureQueriesContext(connection) as good:
    batch.flush()
first_pages = list(batch.outcome.page_ids)
# A NUL in a header value is refused by the driver: the group falls back to one by one.
batch.fetched = [(claimed["bad"], result(claimed["bad"], content_type="text/html\\x00evil"))]
batch.flush()

def state(n):
    return Url.objects.get(url=f"http://a.example/{n}").state
print(json.dumps({
    # A statement's first use on a connection also PREPAREs it (crawlcore.db.prepared): not a write.
    "statements": len([q for q in good.captured_queries if not q["sql"].startswith("PREPARE ")]),
    "prepared": [q["sql"].split()[0] for q in good.captured_queries],
    "states": {n: state(n) for n in claimed},
    "events": sorted(UrlEvent.objects.values_list("url__url", "from_state", "to_state", "http_status")),
    "pages": sorted(Page.objects.values_list("url__url", flat=True)),
    "page_ids": sorted(first_pages) == sorted(Page.objects.filter(content_type="text/html").values_list("id",
                                                                                                    flat=True)),
    "pending_checks": StatusCheck.objects.filter(category="pending").count(),
    "checks": sorted(StatusCheck.objects.values_list("requested_url", "status_code", "url__url")),
    "bad_failure": Url.objects.get(url="http://a.example/bad").failure_kind,
    "leases": sorted(Url.objects.exclude(lease_owner="").values_list("url", "lease_owner")),
    "fetched": batch.outcome.fetched,
    "exchanges": sorted(Exchange.objects.values_list("requested_url", "status", "method", "url__url", "size")),
}))
"""


def test_a_group_of_pages_is_one_statement_and_keeps_every_guarantee(tmp_path):
    out = _run(tmp_path, FLUSH)
    a = "http://a.example"
    assert out["statements"] == 1
    assert out["prepared"] == ["PREPARE", "EXECUTE"]  # its first use on this connection
    assert out["states"] == {
        "a": "visited",
        "b": "visited",
        "taken": "init",
        "logo.png": "visited",
        "bad": "noresponse1",
    }
    # One event per move, none for the URL another owner holds.
    assert out["events"] == [
        [f"{a}/a", "init", "visited", 200],
        [f"{a}/b", "init", "visited", 200],
        [f"{a}/bad", "init", "noresponse1", 200],
        [f"{a}/logo.png", "init", "visited", 200],
    ]
    # Pages of what moved, not of the resource (checked, not kept) nor of the URL not ours any more.
    assert out["pages"] == [f"{a}/a", f"{a}/b"]
    assert out["page_ids"]
    # Every request is on the record, finished with its URL, including the one whose move lost.
    assert out["pending_checks"] == 0
    assert sorted(c[0] for c in out["checks"]) == sorted(f"{a}/{n}" for n in ("a", "b", "taken", "logo.png", "bad"))
    assert all(c[1] == 200 and c[2] == c[0] for c in out["checks"])
    assert out["bad_failure"] == "bad_response"
    assert out["leases"] == [[f"{a}/taken", "someone else"]]
    assert out["fetched"] == 3
    # The resource's answer is kept for the archive in the same statement; the pages keep theirs on their rows.
    size = len(f"<html><title>{a}/logo.png</title></html>")
    assert out["exchanges"] == [[f"{a}/logo.png", 200, "GET", f"{a}/logo.png", size]]


EXTRACT = """
import json, zlib
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from crawlcore.models import Link, Page, Url
from crawlcore.services.extract import pages_extract
from crawlcore.services.pages import pages_store
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.http import FetchResult, Timings
from crawler.notfollowed import TOO_DEEP

a = "http://a.example"
ids = urls_insert(urls=[NewUrl(f"{a}/p1", 0), NewUrl(f"{a}/p2", 0), NewUrl(f"{a}/known", 1),
                        NewUrl(f"{a}/deep", 9, exclusion_reason=TOO_DEEP)]).ids
Url.objects.filter(url__in=[f"{a}/p1", f"{a}/p2"]).update(state="visited", next_check_at=None)
html = (b'<html><head><title>T</title></head><body><a href="/new">first</a> <a href="/new">second</a>'
        b'<a href="/known">k</a> <a href="/deep">d</a></body></html>')

def fetched(path):
    return FetchResult(url=f"{a}/{path}", method="GET", status=200, headers={"content-type": "text/html"}, body=html,
                       failure=None, detail="", truncated=False, bytes_received=len(html),
                       timings=Timings(None, None, None, None, 1.0), peer_ip=None)
now = timezone.now()
page_ids = pages_store([(ids[f"{a}/p1"], fetched("p1"), "same"), (ids[f"{a}/p2"], fetched("p2"), "same")], now=now)
with CaptureQueriesContext(connection) as seen:
    outcome = pages_extract(page_ids=page_ids)
again = pages_extract(page_ids=page_ids)  # a redelivered message: nothing to do
deep = Url.objects.get(url=f"{a}/deep")
p1, p2 = (Page.objects.get(url__url=f"{a}/{p}") for p in ("p1", "p2"))
links = sorted(Link.objects.values_list("from_url__url", "to_url__url", "anchor_text"))
print(json.dumps({
    "links": links,
    "new": Url.objects.filter(url=f"{a}/new", state="init", exclusion_reason="").exists(),
    # Inserted without model instances (crawlcore.db.bulk.insert_new): every column as bulk_create gave it.
    "new_row": [list(Url.objects.filter(url=f"{a}/new").values_list(
        "failure_count", "in_sitemap", "resource", "lease_owner", "depth", "scope_mode", "offsite_hops"))[0],
        Url.objects.get(url=f"{a}/new").created_at is not None,
        Url.objects.get(url=f"{a}/new").server_id == Url.objects.get(url=f"{a}/p1").server_id],
    "deep": [deep.exclusion_reason, deep.depth, deep.next_check_at is not None],
    "titles": [p1.title, p2.title],
    "extracted": [p1.extracted_at is not None, p2.extracted_at is not None],
    "duplicate_of": [p1.duplicate_of_id, p2.duplicate_of_id == p1.id],
    "outcome": [outcome.pages, outcome.links, again.pages],
    # Each statement is PREPAREd on its first use and EXECUTEd (crawlcore.db.prepared): one write of the links.
    # (The batch's read of its pages, prepared too, names the links: the anchor text of links to each page, for
    # its index.)
    "link_writes": [q["sql"][:20] for q in seen.captured_queries
                    if "crawladmin_link" in q["sql"] and "INSERT" in q["sql"]],
    "one_statement": any("crawladmin_link" in q["sql"] and "UPDATE crawladmin_page" in q["sql"]
                         and "UPDATE crawladmin_url" in q["sql"] for q in seen.captured_queries),
    "executes": sum(q["sql"].startswith("EXECUTE ") for q in seen.captured_queries),
}))
"""


def test_an_extract_batch_writes_lifts_links_and_pages_in_one_statement(tmp_path):
    out = _run(tmp_path, EXTRACT)
    a = "http://a.example"
    # Each page's links once, the first occurrence's anchor text kept; both pages link the same targets.
    assert out["links"] == [
        [f"{a}/p{n}", f"{a}/{target}", text]
        for n in (1, 2)
        for target, text in (("deep", "d"), ("known", "k"), ("new", "first"))
    ]
    assert out["new"]
    assert out["new_row"] == [[0, False, False, "", 1, "any", 0], True, True]
    # Found again through a followed link: no longer set aside, due, at the new depth.
    assert out["deep"] == ["", 1, True]
    assert out["titles"] == ["T", "T"] and out["extracted"] == [True, True]
    # The same body: the later page is a duplicate of the earlier one.
    assert out["duplicate_of"] == [None, True]
    assert out["outcome"] == [2, 6, 0]
    assert len(out["link_writes"]) == 1 and out["one_statement"]


PREPARED = """
import json
from django.db import connection
from django.test.utils import CaptureQueriesContext
from crawlcore.db import prepared

def run(sql, params):
    with connection.cursor() as cur:
        prepared.execute(cur, sql, params)
        return cur.fetchone()[0]

with CaptureQueriesContext(connection) as seen:
    got = [run("SELECT %s::int + 1", [1]), run("SELECT %s::int + 1", [2])]
    connection.close()  # a reconnect (CONN_MAX_AGE, a failed health check): a new session, prepared afresh
    got.append(run("SELECT %s::int + 1", [5]))
    got.append(run("SELECT %s::text LIKE 'a%%'", ["abc"]))  # a literal percent sign: sent as it is
print(json.dumps({"got": got, "sent": [q["sql"].split()[0] for q in seen.captured_queries]}))
"""


def test_a_statement_is_prepared_once_a_connection_and_again_after_a_reconnect(tmp_path):
    with postgres_database() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "t-key-" * 9,
            "CRAWLADMIN_DATA_DIR": str(tmp_path),
        }
        out = json.loads(manage(env, "shell", "-c", PREPARED).stdout.strip().splitlines()[-1])
    assert out["got"] == [2, 3, 6, True]
    assert out["sent"] == ["PREPARE", "EXECUTE", "EXECUTE", "PREPARE", "EXECUTE", "SELECT"]


SPAN = """
import json, re
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from crawlcore.models import Server, StatusCheck, Url
from crawlcore.services.request_records import CLOCK_MARGIN
from crawlcore.services.load import LoadBatch
from crawlcore.services.urls import urls_claim
from crawlcore.services.visit import ServerVisit
from crawler.http import FetchResult, Timings
from crawler.lifecycle import Agent
from crawler.urlnorm import url_hash

server = Server.objects.create(scheme="http", host="a.example", port=80)
for p in ("/a", "/b"):
    u = f"http://a.example{p}"
    Url.objects.create(url=u, url_hash=url_hash(u), server=server, state="init",
                       next_check_at=timezone.now())
visit = ServerVisit(server, "me", Agent.LOAD)
claimed = urls_claim(server_id=server.id, owner="me", limit=10)
visit.reserve([c.url for c in claimed])
batch = LoadBatch(visit)
batch.pending = dict.fromkeys(c.id for c in claimed)
batch.fetched = [(c, FetchResult(url=c.url, method="GET", status=200, headers={"content-type": "text/html"},
                                 body=b"<html></html>", failure=None, detail="", truncated=False, bytes_received=13,
                                 timings=Timings(1.0, 2.0, 3.0, 4.0, 10.0), peer_ip="127.0.0.1",
                                 check_id=visit._intents.pop((c.url, "GET"))))
                 for c in claimed]
with CaptureQueriesContext(connection) as seen:
    batch.flush()
write = next(q["sql"] for q in seen.captured_queries if q["sql"].startswith("EXECUTE"))
with connection.cursor() as cur:
    cur.execute("EXPLAIN (COSTS OFF) " + write)
    plan = "\\n".join(row[0] for row in cur.fetchall())
with connection.cursor() as cur:
    cur.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = 'crawladmin_statuscheck'::regclass")
    partitions = sorted(r[0] for r in cur.fetchall())
print(json.dumps({
    "partitions": partitions,
    "planned": sorted(set(re.findall(r"crawladmin_statuscheck_(?:p\\d+|default)\\b", plan))),
    # The days of the span (the visit's opening to now, give or take the clock margin): one, or two when
    # it runs across midnight (a day without a partition of its own is in the default one).
    "near": sorted({name if name in partitions else "crawladmin_statuscheck_default"
                    for name in (f"crawladmin_statuscheck_p{t:%Y%m%d}"
                                 for t in (visit.opened_at - CLOCK_MARGIN, timezone.now() + CLOCK_MARGIN))}),
    "finished": StatusCheck.objects.filter(category="pending").count() == 0 and StatusCheck.objects.count() == 2,
}))
"""


def test_the_outcomes_write_plans_only_the_partitions_of_its_visit(tmp_path):
    """The intents of a visit were begun after it opened, so the write of their outcomes names that
    span of checked_at; PostgreSQL plans and reads the day's partition only, not the week of empty ones ahead
    and the default one."""
    out = _run(tmp_path, SPAN, TIME_ZONE="UTC")
    assert len(out["partitions"]) > 3  # the table has days ahead, and a default partition
    assert out["planned"] == out["near"] and len(out["near"]) <= 2
    assert out["finished"]


ORDER = """
import json
from django.db import connection
from django.test.utils import CaptureQueriesContext
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.urlnorm import url_hash

urls = [f"http://a.example/p{i}" for i in range(40)]
with CaptureQueriesContext(connection) as seen:
    ids = urls_insert(urls=[NewUrl(u, 1) for u in urls], trusted=True).ids
# The last statement naming every hash: the insert (the lookup before it names them too, in any order).
insert = [q["sql"] for q in seen.captured_queries if q["sql"].startswith("EXECUTE")
          and all(url_hash(u) in q["sql"] for u in urls)][-1]
at = {u: insert.index(url_hash(u)) for u in urls}
print(json.dumps({"given": [url_hash(u) for u in urls], "sent": sorted(urls, key=at.get), "ids": len(ids)}))
"""


def test_new_urls_are_inserted_in_the_order_of_their_hash(tmp_path):
    """Two extract batches inserting some of the same new URLs in different orders deadlocked
    (124 times in a 54-second crawl); in the unique key's order they only wait for each other."""
    out = _run(tmp_path, ORDER)
    assert out["ids"] == 40
    assert out["given"] != sorted(out["given"])  # the test's URLs do not come in hash order by themselves
    assert [url_hash(u) for u in out["sent"]] == sorted(out["given"])


REFETCH = """
import hashlib, json
from django.utils import timezone
from crawlcore.models import Page, Server, Url
from crawlcore.services.extract import pages_extract
from crawlcore.services.load import LoadBatch
from crawlcore.services.request_records import check_begin
from crawlcore.services.urls import urls_claim
from crawlcore.services.visit import ServerVisit
from crawler.http import FetchResult, Timings
from crawler.lifecycle import Agent
from crawler.urlnorm import url_hash

server = Server.objects.create(scheme="http", host="a.example", port=80)
for p in ("same", "new"):
    u = f"http://a.example/{p}"
    Url.objects.create(url=u, url_hash=url_hash(u), server=server, state="init", next_check_at=timezone.now())

def result(c, body):
    check_id = check_begin(server_id=server.id, requested_url=c.url, method="GET", agent=Agent.LOAD)
    return FetchResult(url=c.url, method="GET", status=200, headers={"content-type": "text/html"}, body=body,
                       failure=None, detail="", truncated=False, bytes_received=len(body),
                       timings=Timings(1.0, 2.0, 3.0, 4.0, 10.0), peer_ip="127.0.0.1", check_id=check_id,
                       request_head="GET / HTTP/1.1", response_head="HTTP/1.1 200")

def crawl(bodies):
    claimed = {c.url.rsplit("/", 1)[1]: c for c in urls_claim(server_id=server.id, owner="me", limit=10)}
    batch = LoadBatch(ServerVisit(server, "me", Agent.LOAD))
    batch.pending = dict.fromkeys(c.id for c in claimed.values())
    batch.fetched = [(claimed[n], result(claimed[n], bodies[n])) for n in sorted(claimed)]
    batch.flush()
    return {Page.objects.get(id=i).url.url.rsplit("/", 1)[1] for i in batch.outcome.page_ids}

first = {"same": b"<title>Same</title>", "new": b"<title>Old</title>"}
to_extract = [sorted(crawl(first))]
pages_extract(page_ids=list(Page.objects.values_list("id", flat=True)))
extracted = dict(Page.objects.values_list("url__url", "extracted_at"))
Url.objects.update(state="init", next_check_at=timezone.now())  # the scan says both may have changed
to_extract.append(sorted(crawl({"same": b"<title>Same</title>", "new": b"<title>New</title>"})))
pages = {p.url.url.rsplit("/", 1)[1]: [p.title, p.extracted_at == extracted[p.url.url], p.revisit_at is not None]
         for p in Page.objects.select_related("url")}
print(json.dumps({"to_extract": to_extract, "pages": pages}))
"""


def test_a_refetch_of_the_same_body_is_not_extracted_again(tmp_path):
    out = _run(tmp_path, REFETCH)
    assert out["to_extract"] == [["new", "same"], ["new"]]
    # The same body keeps its title and extraction and is a revisit; the new one waits for its extraction.
    assert out["pages"] == {"same": ["Same", True, True], "new": ["", False, False]}
