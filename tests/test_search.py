"""Full-text search over stored pages (search app): the index the extract agent keeps (SQLite FTS5 here;
PostgreSQL's tsvector in tests/test_search_pg.py), CJK bigrams, the ranking formula, filters, escaped
snippets, PDFs read, and `manage.py search`."""

from __future__ import annotations

import io
import json
import math
import zlib
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from crawlcore.models import Page, Server, Url
from crawlcore.services.extract import pages_extract
from crawler.fulltext import MAX_BODY, IndexText, body_index_form, cjk_bigrams, query_words, score, snippet
from crawler.parse import extract
from crawler.pdf import BROKEN, ENCRYPTED, TRUNCATED, read_pdf
from crawler.urlnorm import url_hash
from ranking.models import PageRank, RankRun
from search.selectors import Filters, SearchError, search_pages
from testweb.pdfs import encrypted, make_pdf

# --- pure: the index form, the query, the formula, snippets ------------------------------------------------


def test_cjk_runs_become_overlapping_bigrams_and_other_text_is_kept():
    assert cjk_bigrams("서울대학교에서 공부") == " 서울 울대 대학 학교 교에 에서   공부 "
    assert cjk_bigrams("東京大学 and Python") == " 東京 京大 大学  and Python"
    assert cjk_bigrams("plain english") == "plain english"
    assert cjk_bigrams("가") == " 가 "  # a lone character stays a word


def test_a_query_is_its_words_in_index_form():
    assert query_words("대학") == ["대학"]
    assert query_words("대학교 Admission!") == ["대학", "학교", "admission"]
    assert query_words("  ,;  ") == []


def test_the_body_is_indexed_with_each_word_once_where_it_first_occurs_within_its_bound():
    assert body_index_form("Runs run runs, the run. the") == "Runs run runs, the run."
    assert body_index_form("서울대학 대학") == "서울 울대 대학"  # CJK bigrams, each once
    # `<` is a space: reordered words must not make an HTML tag (ignored by PostgreSQL) that swallows a word.
    assert body_index_form("x <p x> y> zephyr") == "x p x> y> zephyr"
    deep = "alpha beta " * 5900 + "quixotry " + "gamma " * 800 + "farbeyond"
    assert deep.index("quixotry") < MAX_BODY < deep.index("farbeyond")
    form = body_index_form(deep)
    assert form.split()[:4] == ["alpha", "beta", "quixotry", "gamma"] and "farbeyond" not in form
    assert len(form) < 40  # the bound may cut a word: its start is one more word
    assert IndexText.of(title="T", description="", headings="", anchors="", body=deep).body == form


def test_score_is_relevance_times_a_logarithmic_rank_boost():
    assert score(1.0, 0.0, 100, 1.0) == pytest.approx(0.5)  # never ranked: boost 1
    assert score(1.0, 0.01, 100, 1.0) == pytest.approx(0.5 * (1 + math.log(2)))  # an average page
    assert score(1.0, 0.5, 100, 0.0) == pytest.approx(0.5)  # weight 0: text alone
    # A better-linked page wins among pages that match alike; a much better match still beats mild fame.
    assert score(0.2, 0.05, 100, 1.0) > score(0.2, 0.001, 100, 1.0)
    assert score(3.0, 0.001, 100, 1.0) > score(0.05, 0.02, 100, 1.0)


def test_snippet_escapes_the_page_text_and_marks_the_words():
    text = "Intro. " + "x " * 200 + "The <b>admissions</b> office & the admission PDF."
    got = snippet(text, "admission")
    assert "<mark>admissions</mark>" in got and "<mark>admission</mark>" in got
    assert "&lt;b&gt;" in got and "&amp;" in got and "<b>" not in got
    assert got.startswith("…")
    assert "<mark>대학</mark>" in snippet("서울대학교 안내", "대학")


def test_html_text_for_the_index_skips_scripts_and_keeps_words_apart():
    ex = extract(
        b"<html><head><title>T</title><style>.a{}</style></head><body><h1>Main <i>head</i></h1>"
        b"<p>one</p><p>two</p><script>var secret=1</script><noscript>hidden</noscript>three</body></html>",
        "http://a.test/",
    )
    assert ex.headings == "Main head"
    assert " ".join(ex.text.split()) == "Main head one two three"


# --- PDFs ------------------------------------------------------------------------------------------------


def test_a_pdf_gives_its_title_text_and_links():
    body = make_pdf(["Admission guide for zephyrine students", "Second page"], links=["/apply.html", "mailto:x@y"],
                    title="Admission 2026")  # fmt: skip
    got = read_pdf(body, "http://a.test/docs/guide.pdf")
    assert got.title == "Admission 2026" and got.problem == "" and got.pages == 2
    assert "zephyrine" in got.text and "Second page" in got.text
    assert [link.url for link in got.links] == ["http://a.test/apply.html"]
    assert got.links[0].element == "pdf link" and not got.links[0].resource


def test_encrypted_broken_and_long_pdfs_are_classified():
    body = make_pdf(["secret text"])
    assert read_pdf(encrypted(body), "http://a.test/x.pdf").problem == ENCRYPTED
    assert read_pdf(body[: len(body) // 3], "http://a.test/x.pdf").problem == BROKEN
    assert read_pdf(b"<html>not a pdf</html>", "http://a.test/x.pdf").problem == BROKEN
    long = read_pdf(make_pdf([f"page {n}" for n in range(5)]), "http://a.test/x.pdf", max_pages=2)
    assert long.problem == TRUNCATED and "page 1" in long.text and "page 3" not in long.text


# --- the index and the search, on SQLite ------------------------------------------------------------------


@pytest.fixture
def no_dispatch(monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)


def _page(server: Server, path: str, body: bytes, content_type: str = "text/html", **fields) -> Page:
    url = f"{server.origin}{path}"
    u = Url.objects.create(url=url, url_hash=url_hash(url), server=server, state="visited")
    return Page.objects.create(
        url=u, body_z=zlib.compress(body), content_type=content_type, checksum=url_hash(url),
        fetched_at=fields.pop("fetched_at", timezone.now()), **fields,
    )  # fmt: skip


def _html(title: str, body: str, links: str = "") -> bytes:
    return f"<html><head><title>{title}</title></head><body><h2>{title}</h2><p>{body}</p>{links}</body></html>".encode()


def _rank(pages: dict[str, float]) -> None:
    now = timezone.now()
    for url, rank in pages.items():
        u = Url.objects.get(url=url)
        PageRank.objects.create(url=u, server_id=u.server_id, page_id=0, site_id=0, domain_id=0, community_id=0,
                                domain="", community="", rank=rank, local_rank=rank, block_rank=1.0,
                                computed_at=now)  # fmt: skip
    RankRun.objects.create(finished_at=now, block="site", pages=len(pages), links=0, dangling=0, sites=1, domains=1,
                           communities=1, blocks=1, damping=0.85, tolerance=1e-8, local_iterations=1,
                           block_iterations=1, global_iterations=1, converged=True, residual=0.0, read_seconds=0,
                           rank_seconds=0, write_seconds=0)  # fmt: skip


@pytest.fixture
def web(db, no_dispatch):
    a = Server.objects.create(scheme="http", host="a.test", port=80, group="uni")
    b = Server.objects.create(scheme="http", host="b.test", port=80, group="gov")
    pages = [
        _page(a, "/", _html("Home", "Welcome to the university", '<a href="/apply">How to apply</a>')),
        _page(a, "/apply", _html("Apply", "The admission office takes <b>zephyrine</b> forms & letters.")),
        _page(a, "/news", _html("News", "A zephyrine festival is held each spring.")),
        _page(a, "/ko", _html("안내", "서울대학교에서 공부하는 학생들을 위한 안내입니다.")),
        _page(a, "/ja", _html("案内", "東京大学の入学案内です。")),
        _page(b, "/guide.pdf", make_pdf(["Zephyrine handbook for running offices"], links=["/"]),
              content_type="application/pdf", fetched_at=timezone.now() - timedelta(days=10)),  # fmt: skip
        _page(b, "/other", _html("Other", "Nothing to see; <script>zephyrine()</script>")),
    ]
    pages_extract(page_ids=[p.id for p in pages])
    return {p.url.url: p for p in pages}


def _urls(hits) -> list[str]:
    return [h.url for h in hits]


def test_every_page_containing_a_word_is_found_and_no_other(web):
    assert sorted(_urls(search_pages(query="zephyrine"))) == [
        "http://a.test/apply", "http://a.test/news", "http://b.test/guide.pdf",
    ]  # fmt: skip
    assert _urls(search_pages(query="zephyrine festival")) == ["http://a.test/news"]
    assert search_pages(query="nowhere") == []


def test_english_is_stemmed_and_anchor_text_of_links_to_a_page_counts(web):
    assert sorted(_urls(search_pages(query="office"))) == sorted(_urls(search_pages(query="offices"))) != []
    assert "http://b.test/guide.pdf" in _urls(search_pages(query="run"))  # "running" in the PDF
    # Extracted again after the home page's link to it is known, /apply is found by the link's words too.
    assert _urls(search_pages(query="how to apply")) == ["http://a.test/"]
    Page.objects.filter(url__url="http://a.test/apply").update(extracted_at=None)
    pages_extract(page_ids=[web["http://a.test/apply"].id])
    assert sorted(_urls(search_pages(query="how to apply"))) == ["http://a.test/", "http://a.test/apply"]


def test_korean_and_japanese_words_find_their_pages_without_a_dictionary(web):
    assert _urls(search_pages(query="대학")) == ["http://a.test/ko"]  # inside 서울대학교에서
    assert _urls(search_pages(query="학생")) == ["http://a.test/ko"]
    assert _urls(search_pages(query="대학교")) == ["http://a.test/ko"]
    assert _urls(search_pages(query="東京")) == ["http://a.test/ja"]
    assert _urls(search_pages(query="入学")) == ["http://a.test/ja"]
    assert search_pages(query="대학원") == []  # 학원 is nowhere


def test_the_better_ranked_page_comes_first_among_equal_matches(web):
    before = _urls(search_pages(query="zephyrine"))
    _rank({"http://a.test/news": 0.6, "http://a.test/apply": 0.05, "http://b.test/guide.pdf": 0.05})
    hits = search_pages(query="zephyrine")
    assert hits[0].url == "http://a.test/news" and hits[0].rank == pytest.approx(0.6)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for h in hits:  # the database computes the documented formula
        assert h.score == pytest.approx(score(h.relevance, h.rank, 3, 1.0))
    assert before != _urls(hits) or before[0] == "http://a.test/news"


def test_a_long_page_is_found_by_its_title_heading_and_a_word_deep_in_its_body(db, no_dispatch):
    a = Server.objects.create(scheme="http", host="a.test", port=80)
    text = "lorem ipsum dolor " * 3300 + "quixotry " + "sit amet " * 1000 + "farbeyond"
    assert text.index("quixotry") > 55_000 and text.index("farbeyond") > MAX_BODY
    long = _page(a, "/long", _html("Almanac", text))
    titled = _page(a, "/titled", _html("Quixotry", "A short page."))
    pages_extract(page_ids=[long.id, titled.id])
    assert _urls(search_pages(query="almanac")) == ["http://a.test/long"]
    assert _urls(search_pages(query="quixotry")) == ["http://a.test/titled", "http://a.test/long"]
    assert _urls(search_pages(query="quixotry lorem")) == ["http://a.test/long"]
    assert search_pages(query="farbeyond") == []  # past the body's bound: not indexed (docs/SEARCH.md)


def test_filters_by_site_group_type_and_date(web):
    assert _urls(search_pages(query="zephyrine", filters=Filters(site="b.test"))) == ["http://b.test/guide.pdf"]
    assert _urls(search_pages(query="zephyrine", filters=Filters(group="gov"))) == ["http://b.test/guide.pdf"]
    assert _urls(search_pages(query="zephyrine", filters=Filters(content_type="pdf"))) == ["http://b.test/guide.pdf"]
    recent = search_pages(query="zephyrine", filters=Filters(since=timezone.now() - timedelta(days=1)))
    assert "http://b.test/guide.pdf" not in _urls(recent) and len(recent) == 2
    assert search_pages(query="zephyrine", filters=Filters(groups=frozenset({"none"}))) == []


def test_snippets_are_escaped_with_the_words_marked(web):
    (hit,) = search_pages(query="forms", filters=Filters(site="a.test"))
    assert "<mark>forms</mark>" in hit.snippet and "&amp;" in hit.snippet and "<b>" not in hit.snippet


def test_a_pdf_is_extracted_its_links_recorded_and_problems_kept(web):
    pdf = Page.objects.get(url__url="http://b.test/guide.pdf")
    assert pdf.extracted_at is not None and pdf.extract_problem == "" and pdf.anchors is None
    assert Url.objects.filter(url="http://b.test/").exists()
    server = Server.objects.get(host="b.test")
    bad = _page(server, "/locked.pdf", encrypted(make_pdf(["zephyrine inside"])), content_type="application/pdf")
    pages_extract(page_ids=[bad.id])
    bad.refresh_from_db()
    assert bad.extract_problem == ENCRYPTED and bad.extracted_at is not None


def test_the_search_command_prints_json_in_rank_order(web):
    out = io.StringIO()
    call_command("search", "zephyrine", "--json", "--limit", "2", stdout=out)
    got = json.loads(out.getvalue())
    assert len(got["results"]) == 2 and {"url", "title", "score"} <= set(got["results"][0])
    assert got["results"][0]["score"] >= got["results"][1]["score"]
    text = io.StringIO()
    call_command("search", "festival", stdout=text)
    assert "http://a.test/news" in text.getvalue() and "*festival*" in text.getvalue()


@pytest.mark.parametrize(("args", "message"), [(["!!"], "no words"), (["x", "--limit", "0"], "limit"),
                                               (["x", "--since", "yesterday"], "--since")])  # fmt: skip
def test_a_bad_query_is_one_clear_line(db, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("search", *args, stdout=io.StringIO())


def test_search_error_on_an_empty_query(db):
    with pytest.raises(SearchError):
        search_pages(query="  ")


def test_the_analyzer_reads_a_pdfs_text_for_its_language():
    from analyzer.classify import analyze_page

    text = ("The university publishes its admission guide for students who apply this year, with the dates of "
            "the examinations and the documents every applicant must send to the office.")  # fmt: skip
    body = make_pdf([text])
    facts = analyze_page("http://a.test/guide.pdf", "application/pdf", lambda: body)
    assert facts.language == "en" and facts.content_class == "document"


# --- the dashboard's search page ---------------------------------------------------------------------------


@pytest.fixture
def reader(client, db):
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user("reader", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    return client


def test_the_search_page_escapes_scraped_text_and_marks_the_words(reader, web):
    server = Server.objects.get(host="a.test")
    hostile = _page(server, "/x", _html("<script>alert(1)</script>", "zephyrine <img src=x onerror=alert(2)>"))
    pages_extract(page_ids=[hostile.id])
    page = reader.get("/dashboard/search/", {"q": "zephyrine"}).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "<mark>zephyrine</mark>" in page.lower()
    assert "http://b.test/guide.pdf" in page and "PDF" in page
    assert reader.get("/dashboard/search/", {"q": "zephyrine", "type": "exe"}).status_code == 400
    assert "no words" in reader.get("/dashboard/search/", {"q": "!!"}).content.decode()


def test_a_reader_limited_to_server_groups_finds_only_their_pages(client, web):
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user("limited", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"), Group.objects.get_or_create(name="servers:gov")[0])
    client.force_login(user)
    page = client.get("/dashboard/search/", {"q": "zephyrine"}).content.decode()
    assert "http://b.test/guide.pdf" in page and "http://a.test/news" not in page
    assert client.get("/dashboard/search/", {"q": "zephyrine", "group": "uni"}).status_code == 404


def test_a_pdfs_text_is_made_storable():
    body = make_pdf(["nul\x00here"], title="t\x01itle")
    got = read_pdf(body, "http://a.test/x.pdf")
    assert "\x00" not in got.text and "nulhere" in got.text.replace(" ", "") and got.title == "title"
