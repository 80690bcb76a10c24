"""Search on real PostgreSQL: the extract agent stores each page's index text in its one group statement
(crawlcore.db.chain), a batch apart builds the tsvectors (crawlcore.services.search_index), the GIN index
serves the match, and the search finds what the SQLite tests find:
every page with the word (a PDF among them), Korean and Japanese by bigrams, stemmed English, the better
ranked page first. Through `manage.py shell` against a fresh database."""

from __future__ import annotations

import json
import os

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

SCRIPT = """
import json, zlib
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from crawlcore.models import Page, Server, Url
from crawlcore.services.extract import pages_extract
from crawler.urlnorm import url_hash
from ranking.models import PageRank, RankRun
from search.selectors import Filters, search_pages
from testweb.pdfs import encrypted, make_pdf

import crawlcore.services.extract as extract_module
extract_module.servers_dispatch_with_due_work = lambda **kw: 0

a = Server.objects.create(scheme="http", host="a.test", port=80, group="uni")

def page(path, body, ct="text/html"):
    u = Url.objects.create(url=f"http://a.test{path}", url_hash=url_hash(f"http://a.test{path}"), server=a,
                           state="visited")
    return Page.objects.create(url=u, body_z=zlib.compress(body), content_type=ct, checksum=path,
                               fetched_at=timezone.now())

def html(title, text):
    return f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>".encode()

pages = [
    page("/", html("Home", 'Welcome <a href="/news">the festival news</a>')),
    page("/apply", html("Apply", "The admission office takes zephyrine forms.")),
    page("/news", html("News", "A zephyrine festival; runners running.")),
    page("/ko", html("안내", "서울대학교에서 공부하는 학생들")),
    page("/ja", html("案内", "東京大学の入学案内です。")),
    page("/guide.pdf", make_pdf(["Zephyrine handbook"], links=["/apply"]), "application/pdf"),
    page("/locked.pdf", encrypted(make_pdf(["zephyrine"])), "application/pdf"),
    page("/long", html("Almanac", "lorem ipsum dolor " * 3300 + "quixotry " + "sit amet " * 1000 + "farbeyond")),
    page("/titled", html("Quixotry", "A short page.")),
]
with CaptureQueriesContext(connection) as seen:
    pages_extract(page_ids=[p.id for p in pages])
from crawlcore.db.fulltext import pending_count
from crawlcore.services.search_index import pages_index
waiting = pending_count()
indexed = pages_index().pages
now = timezone.now()
for path, rank in (("/news", 0.5), ("/apply", 0.05), ("/guide.pdf", 0.05)):
    u = Url.objects.get(url=f"http://a.test{path}")
    PageRank.objects.create(url=u, server_id=a.id, page_id=0, site_id=0, domain_id=0, community_id=0, domain="",
                            community="", rank=rank, local_rank=rank, block_rank=1.0, computed_at=now)
RankRun.objects.create(finished_at=now, block="site", pages=7, links=0, dangling=0, sites=1, domains=1,
                       communities=1, blocks=1, damping=0.85, tolerance=1e-8, local_iterations=1,
                       block_iterations=1, global_iterations=1, converged=True, residual=0.0, read_seconds=0,
                       rank_seconds=0, write_seconds=0)

def urls(q, **f):
    return [h.url.removeprefix("http://a.test") for h in search_pages(query=q, filters=Filters(**f))]

with connection.cursor() as cur:
    cur.execute("SET enable_seqscan = off")
    cur.execute("EXPLAIN SELECT id FROM crawladmin_page WHERE search_vector @@ plainto_tsquery('english', 'x')")
    plan = " ".join(r[0] for r in cur.fetchall())
    # Each body word once: the lexemes of the whole text, none lost (tag-like text's words gained).
    from crawler.fulltext import MAX_BODY, body_index_form, index_form
    varied = ("x <p x> y> see http://a.b/c?d=1 and me@x.org, 1.5e10 v2.3.4 /usr/lib/x.so well-known co-op "
              "3-4 서울대학교에서 東京 naïve café &amp; running runs. " * 3)
    lexemes = "SELECT array(SELECT unnest(tsvector_to_array(to_tsvector('english', %s))) ORDER BY 1)"
    cur.execute(lexemes, [index_form(varied, MAX_BODY)])
    whole = set(cur.fetchone()[0])
    cur.execute(lexemes, [body_index_form(varied)])
    once = set(cur.fetchone()[0])
    cur.execute("SELECT array_length(positions, 1) FROM crawladmin_page p JOIN crawladmin_url u ON u.id = p.url_id, "
                "unnest(p.search_vector) WHERE u.url = 'http://a.test/long' AND lexeme = 'lorem'")
    lorem_positions = cur.fetchone()[0]
hits = search_pages(query="zephyrine")
print(json.dumps({
    "zephyrine": [h.url.removeprefix("http://a.test") for h in hits],
    "scores": [[h.relevance, h.rank, h.score] for h in hits],
    "snippet": hits[0].snippet,
    "stemmed": urls("runs"),
    "korean": urls("대학"), "korean3": urls("대학교"), "japanese": urls("東京"), "none": urls("대학원"),
    "pdf_only": urls("zephyrine", content_type="pdf"),
    "problem": Page.objects.get(url__url="http://a.test/locked.pdf").extract_problem,
    "page_writes": sum("UPDATE crawladmin_page" in q["sql"] for q in seen.captured_queries),
    "waiting": waiting, "indexed": indexed, "left": pending_count(),
    "one_statement": any("ix_body" in q["sql"] and "crawladmin_link" in q["sql"]
                         for q in seen.captured_queries),
    "plan": plan,
    "lost": sorted(whole - once), "gained": sorted(once - whole), "lorem_positions": lorem_positions,
    "almanac": urls("almanac"), "quixotry": urls("quixotry"), "farbeyond": urls("farbeyond"),
}))
"""


def test_the_extract_agent_keeps_the_tsvector_and_search_ranks_with_blockrank(tmp_path):
    with postgres_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "t-key-" * 9,
               "CRAWLADMIN_DATA_DIR": str(tmp_path)}  # fmt: skip
        manage(env, "migrate", "--verbosity", "0")
        out = json.loads(manage(env, "shell", "-c", SCRIPT).stdout.strip().splitlines()[-1])
    # Every page with the word, the encrypted PDF (unreadable) not; the best-ranked first.
    assert out["zephyrine"][0] == "/news"
    assert sorted(out["zephyrine"]) == ["/apply", "/guide.pdf", "/news"]
    for relevance, rank, score in out["scores"]:
        import math

        assert score == pytest.approx(relevance / (1 + relevance) * (1 + math.log1p(7 * rank)), rel=1e-5)
    assert "<mark>zephyrine</mark>" in out["snippet"]
    assert out["stemmed"] == ["/news"]
    assert out["korean"] == ["/ko"] and out["korean3"] == ["/ko"] and out["japanese"] == ["/ja"]
    assert out["none"] == []
    assert out["pdf_only"] == ["/guide.pdf"]
    assert out["problem"] == "pdf_encrypted"
    # The index text is written by the batch's one group statement, with the links: no extra pass; the
    # vectors by one batch after it, which leaves nothing waiting.
    assert out["page_writes"] == 1 and out["one_statement"]
    assert out["waiting"] == out["indexed"] == 9 and out["left"] == 0
    assert "page_search_idx" in out["plan"]
    # A long page: found by its title and a word deep in its body; the title's page first; past the bound, not.
    assert out["almanac"] == ["/long"] and out["quixotry"] == ["/titled", "/long"] and out["farbeyond"] == []
    # The body's words are indexed once each, and give every lexeme the whole text gives.
    assert out["lorem_positions"] == 1
    assert out["lost"] == [] and out["gained"] == ["p"]  # the tag-like `<p x>`
