"""Search end to end, as a user runs it: on a local web made afresh (its words drawn at random), an embedded
crawl, `rank`, then `search WORD --json` finds every page with the word (a PDF among them) and no other, the
page with more in-links first; a Korean two-syllable word finds its Korean page; and `dead_links --sort
impact --format csv` lists the broken link on the most-linked page first."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from testweb.searchweb import SearchWeb

from .crawlcheck import ROOT, clean_env, run_crawl


def manage(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    data = tmp_path_factory.mktemp("search")
    with SearchWeb(71) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(data))
        run_crawl(env, *web.seeds())
        manage(env, "rank", "--json", "--no-progress")
        yield web, env


def test_search_finds_every_page_with_the_word_and_no_other_best_linked_first(crawled):
    web, env = crawled
    got = json.loads(manage(env, "search", web.word, "--json"))
    urls = [hit["url"] for hit in got["results"]]
    assert set(urls) == web.with_word() and len(urls) == len(set(urls))
    assert urls[0] == web.most_linked_with_word
    assert [hit["score"] for hit in got["results"]] == sorted((h["score"] for h in got["results"]), reverse=True)
    pdf = next(hit for hit in got["results"] if hit["url"].endswith("/doc.pdf"))
    assert pdf["title"] == "Guide" and f"<mark>{web.word}</mark>" in pdf["snippet"]


def test_a_korean_two_syllable_word_finds_its_korean_page(crawled):
    web, env = crawled
    got = json.loads(manage(env, "search", web.korean, "--json"))
    assert [hit["url"] for hit in got["results"]] == [web.korean_page]


def test_the_pdfs_link_was_followed(crawled):
    web, env = crawled
    got = json.loads(manage(env, "search", "guide", "--json", "--site", f"{web.host}:{web.port}"))
    # The page only the PDF links to ("Linked from the guide") was crawled, extracted and indexed.
    assert f"{web.origin}/from-pdf" in {hit["url"] for hit in got["results"]}


def test_dead_links_by_impact_lists_the_broken_link_on_the_most_linked_page_first(crawled):
    web, env = crawled
    rows = list(csv.DictReader(io.StringIO(manage(env, "dead_links", "--sort", "impact", "--format", "csv"))))
    assert len(rows) == 2
    assert (rows[0]["source_url"], rows[0]["target_url"]) == web.broken_on_home
    assert float(rows[0]["impact"]) > float(rows[1]["impact"]) > 0
