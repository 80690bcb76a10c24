"""The pages' full-text vectors built in batches on real PostgreSQL (crawlcore.services.search_index): a page
the extract agent stored is not found until a batch has built its vector, and then it is; a batch never takes
more than its bound; a batch waits to grow only while pages are still being extracted and the oldest page has
waited less than half of SEARCH_INDEX_DELAY. Through `manage.py shell` against one fresh database."""

from __future__ import annotations

import json
import os

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

SETUP = """
import json, zlib
from datetime import timedelta
from django.utils import timezone
from crawlcore.db import fulltext
from crawlcore.models import Page, Server, Url
from crawlcore.services.extract import pages_extract
from crawlcore.services.search_index import pages_index
from crawler.urlnorm import url_hash
from search.selectors import Filters, search_pages

import crawlcore.services.extract as extract_module
extract_module.servers_dispatch_with_due_work = lambda **kw: 0

server, _ = Server.objects.get_or_create(scheme="http", host="a.test", port=80, defaults={"group": "uni"})

def page(path, text):
    u = Url.objects.create(url=f"http://a.test{path}", url_hash=url_hash(f"http://a.test{path}"), server=server,
                           state="visited")
    body = f"<html><head><title>{path}</title></head><body><p>{text}</p></body></html>".encode()
    return Page.objects.create(url=u, body_z=zlib.compress(body), content_type="text/html", checksum=path,
                               fetched_at=timezone.now())

def found(word):
    return [h.url.removeprefix("http://a.test") for h in search_pages(query=word, filters=Filters())]
"""

SEARCHABLE = (
    SETUP
    + """
stored = page("/one", "A page about quillwort and bracken.")
unfetched = page("/two", "Not extracted yet.")  # keeps the crawl 'extracting': a batch may wait to grow
pages_extract(page_ids=[stored.id])
before = found("quillwort")
waiting_before = fulltext.pending_count()
early = pages_index()  # the oldest waited less than half the delay, a page is still to extract: it waits
still = found("quillwort")
later = pages_index(now=timezone.now() + timedelta(hours=1))  # the delay is up for the oldest
print(json.dumps({
    "before": before, "waiting_before": waiting_before, "early": [early.pages, early.waited], "still": still,
    "later": [later.pages, later.waited], "after": found("quillwort"), "stemmed": found("brackens"),
    "left": fulltext.pending_count(),
}))
"""
)

BOUND = (
    SETUP
    + """
ids = [page(f"/b{i}", f"word{i} common").id for i in range(7)]
pages_extract(page_ids=ids)
first = fulltext.index_pending(limit=3)
left = fulltext.pending_count()
run = pages_index(batch=3, force=True)
print(json.dumps({
    "first": first, "left": left, "run": [run.pages, run.batches], "common": len(found("common")),
    "nothing": [pages_index(batch=3).pages, pages_index(batch=3).waited],
}))
"""
)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with postgres_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "t-key-" * 9,
               "CRAWLADMIN_DATA_DIR": str(tmp_path_factory.mktemp("data"))}  # fmt: skip
        manage(env, "migrate", "--verbosity", "0")
        yield env


def _run(env, script: str) -> dict:
    return json.loads(manage(env, "shell", "-c", script).stdout.strip().splitlines()[-1])


def test_a_stored_page_is_found_once_a_batch_has_built_its_vector_and_not_before(env):
    out = _run(env, SEARCHABLE)
    assert out["before"] == [] and out["waiting_before"] == 1
    assert out["early"] == [0, ""] and out["still"] == []
    assert out["later"] == [1, "delay"]
    assert out["after"] == ["/one"] and out["stemmed"] == ["/one"]
    assert out["left"] == 0


def test_a_batch_never_takes_more_pages_than_its_bound(env):
    out = _run(env, BOUND)
    assert out["first"] == 3 and out["left"] == 4
    assert out["run"] == [4, 2]  # 3, then 1: two statements
    assert out["common"] == 7
    assert out["nothing"] == [0, ""]
