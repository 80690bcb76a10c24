"""A chain (crawlcore.db.chain) is described once and writes the same rows on both databases: one statement on
PostgreSQL, step by step on SQLite. The same script, through `manage.py shell`, against a fresh PostgreSQL
database and a fresh SQLite one: a claim, a load group (a URL another owner took, a resource, a page fetched
again with the same body), an extract batch (a lifted exclusion, links, a duplicate, the full-text index),
and a redelivered extract message, then every row they wrote."""

from __future__ import annotations

import json
import os

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

SCRIPT = """
import json
from django.utils import timezone
from crawlcore.models import Exchange, Link, Page, Server, StatusCheck, Url, UrlEvent
from crawlcore.services.extract import pages_extract
from crawlcore.services.load import LoadBatch
from crawlcore.services.request_records import check_begin
from crawlcore.services.urls import NewUrl, urls_claim, urls_insert
from crawlcore.services.visit import ServerVisit
from crawler.http import FetchResult, Timings
from crawler.lifecycle import Agent
from crawler.notfollowed import TOO_DEEP
from search.selectors import search_pages

a = "http://a.example"
server = Server.objects.create(scheme="http", host="a.example", port=80)
urls_insert(urls=[NewUrl(f"{a}{p}", 0, resource=p.endswith(".png")) for p in ("/a", "/b", "/taken", "/logo.png")])
urls_insert(urls=[NewUrl(f"{a}/deep", 9, exclusion_reason=TOO_DEEP)])
claimed = {c.url.rsplit("/", 1)[1]: c for c in urls_claim(server_id=server.id, owner="me", limit=10)}
Url.objects.filter(url=f"{a}/taken").update(lease_owner="someone else")

def result(c, body, *, content_type="text/html"):
    check_id = check_begin(server_id=server.id, requested_url=c.url, method="GET", agent=Agent.LOAD)
    return FetchResult(url=c.url, method="GET", status=200, headers={"content-type": content_type}, body=body,
                       failure=None, detail="", truncated=False, bytes_received=len(body),
                       timings=Timings(1.0, 2.0, 3.0, 4.0, 10.0), peer_ip="127.0.0.1", check_id=check_id,
                       request_head="GET / HTTP/1.1", response_head="HTTP/1.1 200")

html = (b"<html><head><title>Walrus pages</title></head><body><a href='/new'>first</a> <a href='/new'>again</a>"
        b"<a href='/deep'>deep</a> <a href='/b'>b</a></body></html>")
batch = LoadBatch(ServerVisit(server, "me", Agent.LOAD))
batch.pending = dict.fromkeys(c.id for c in claimed.values())
# In the claim's order (by id, which the URL key decides): the pages' ids follow it on both databases.
order = sorted(("a", "b", "taken"), key=lambda n: claimed[n].id)
batch.fetched = [(claimed[n], result(claimed[n], html)) for n in order]
batch.fetched.append((claimed["logo.png"], result(claimed["logo.png"], b"png", content_type="image/png")))
batch.flush()
first = pages_extract(page_ids=batch.outcome.page_ids)
again = pages_extract(page_ids=batch.outcome.page_ids)

def url(pk):
    return Url.objects.get(id=pk).url if pk else None

from crawlcore.services.search_index import pages_index
pages_index(force=True)  # PostgreSQL builds the vectors in a batch apart; SQLite indexed in line (a no-op)
print(json.dumps({
    "claimed": sorted(claimed),
    "original": min((claimed["a"], claimed["b"]), key=lambda c: c.id).url,
    "outcome": [batch.outcome.fetched, len(batch.outcome.page_ids), first.pages, first.links, first.new_urls,
                again.pages],
    "urls": sorted(Url.objects.values_list("url", "state", "depth", "exclusion_reason", "lease_owner",
                                           "last_status", "failure_count", "checksum")),
    "due": sorted(Url.objects.filter(next_check_at__isnull=False).values_list("url", flat=True)),
    "events": sorted(UrlEvent.objects.values_list("url__url", "from_state", "to_state", "agent", "http_status",
                                                  "latency_ms", "reason")),
    "checks": sorted(StatusCheck.objects.values_list("requested_url", "category", "status_code", "url__url",
                                                     "latency_ms", "bytes")),
    "pages": sorted([p.url.url, p.title, p.content_type, p.size, p.extracted_at is not None,
                     p.extract_dispatched_at is not None, url(p.duplicate_of.url_id if p.duplicate_of else None)]
                    for p in Page.objects.select_related("url", "duplicate_of")),
    "links": sorted(Link.objects.values_list("from_url__url", "to_url__url", "anchor_text", "element", "nofollow")),
    "exchanges": sorted(Exchange.objects.values_list("requested_url", "status", "method", "url__url", "size",
                                                     "kind")),
    "found": sorted(hit.url for hit in search_pages(query="walrus", snippets=False)),
}))
"""


def _run(env: dict[str, str], script: str = SCRIPT) -> dict:
    manage(env, "migrate", "--verbosity", "0")
    return json.loads(manage(env, "shell", "-c", script).stdout.strip().splitlines()[-1])


def _both(tmp_path, script: str = SCRIPT) -> tuple[dict, dict]:
    """What `script` prints on a fresh SQLite database and on a fresh PostgreSQL one."""
    base = {**os.environ, "DJANGO_SECRET_KEY": "t-key-" * 9}
    base.pop("DATABASE_URL", None)
    lite = _run({**base, "CRAWLADMIN_DATA_DIR": str(tmp_path / "sqlite")}, script)
    with postgres_database() as url:
        pg = _run({**base, "DATABASE_URL": url, "CRAWLADMIN_DATA_DIR": str(tmp_path / "pg")}, script)
    return lite, pg


def test_a_chain_writes_the_same_rows_on_postgresql_and_on_sqlite(tmp_path):
    lite, pg = _both(tmp_path)
    assert pg == lite
    a = "http://a.example"
    # What the chains did, said once: the URL another owner holds did not move, got no event and no page.
    assert pg["outcome"] == [3, 2, 2, 5, 3, 0]
    assert [e[0] for e in pg["events"]] == [f"{a}/a", f"{a}/b", f"{a}/logo.png"]
    assert sorted(p[0] for p in pg["pages"]) == [f"{a}/a", f"{a}/b"]
    # The same body: the later page is a duplicate of the earlier one.
    copy = ({f"{a}/a", f"{a}/b"} - {pg["original"]}).pop()
    assert {p[0]: p[6] for p in pg["pages"]} == {pg["original"]: None, copy: pg["original"]}
    assert [u for u in pg["urls"] if u[0] == f"{a}/deep"] == [[f"{a}/deep", "init", 1, "", "", None, 0, ""]]
    assert [e[0] for e in pg["exchanges"]] == [f"{a}/logo.png"]
    assert pg["found"] == [pg["original"]]  # indexed; its duplicate is left out of a search


CONFLICT = """
import json
from django.db import IntegrityError, transaction
from crawlcore.db.chain import Input, Insert, chain
from crawlcore.models import Link
from crawlcore.services.urls import NewUrl, urls_insert

ids = urls_insert(urls=[NewUrl(f"http://a.example/{n}", 0) for n in ("a", "b", "c")]).ids
a, b, c = (ids[f"http://a.example/{n}"] for n in ("a", "b", "c"))
known = Link.objects.create(from_url_id=a, to_url_id=b, anchor_text="old")
columns = (("id", "bigint"), ("from_url_id", "bigint"), ("to_url_id", "bigint"), ("anchor_text", "text"))

def insert(rows):
    write = Insert("linked", Link._meta.db_table, {"id": "id", "from_url_id": "from_url_id", "to_url_id": "to_url_id",
                   "anchor_text": "anchor_text"}, conflict="from_url_id, to_url_id", ignore_conflicts=True,
                   returning=("to_url_id",), source="links")
    return chain({"links": Input(columns, rows)}, [write])["linked"]

out = {"new": insert([(known.id + 10, a, b, "again"), (known.id + 11, a, c, "new")])}
try:
    with transaction.atomic():
        insert([(known.id, b, c, "same id, another key")])
    out["same_id"] = "no error"
except IntegrityError:
    out["same_id"] = "refused"
out["links"] = sorted(list(row) for row in Link.objects.values_list("from_url_id", "to_url_id", "anchor_text"))
out["ids"] = [a, b, c]
print(json.dumps(out))
"""


def test_a_known_link_is_left_out_by_its_key_and_a_clash_on_the_primary_key_is_an_error(tmp_path):
    """A chain's INSERT that ignores conflicts on one named unique index (crawlcore.db.chain: `conflict` with
    `ignore_conflicts`), as the extract batch writes its links: a row whose key (from, to) is known is left out,
    on both databases, and the serial primary key is no arbiter (PostgreSQL probes no other index before each row):
    a clash on it is an error, never a row silently dropped."""
    for out in _both(tmp_path, CONFLICT):
        a, b, c = out["ids"]
        assert out["new"] == [[c]]
        assert out["links"] == sorted([[a, b, "old"], [a, c, "new"]])
        assert out["same_id"] == "refused"
