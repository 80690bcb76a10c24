from __future__ import annotations

import os

import pytest

from crawler.parse import MAX_ANCHOR_TEXT, MAX_DESCRIPTION, MAX_TITLE, OVER_LIMIT, Extracted, extract, is_html

PAGE = "http://example.com/dir/page.html"


def html(body: str, head: str = "") -> bytes:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>".encode()


@pytest.mark.parametrize(
    ("ctype", "expected"),
    [
        (None, True),
        ("", True),
        ("text/html", True),
        ("text/html; charset=utf-8", True),
        ("TEXT/HTML;charset=UTF-8", True),
        ("application/xhtml+xml", True),
        ("text/plain", False),
        ("application/pdf", False),
        ("image/png", False),
        ("application/json; charset=utf-8", False),
    ],
)
def test_is_html(ctype: str | None, expected: bool) -> None:
    assert is_html(ctype) is expected


def test_basic_extraction() -> None:
    body = html(
        '<a href="/a">A</a> <a href="b?y=2&x=1#frag">B</a> <a href="http://Other.COM:80">O</a>'
        '<map><area href="/area"></map><iframe src="//cdn.example.net/frame"></iframe>'
        '<frameset><frame src="frame.html"></frameset>',
        head='<title>\n  Hello \t  World\n</title><meta name="Description" content="  A   short\n description ">',
    )
    out = extract(body, PAGE)
    assert (out.title, out.description, out.rejected, out.nofollow, out.base_url) == (
        "Hello World",
        "A short description",
        {},
        False,
        PAGE,
    )
    assert out.urls == [
        "http://example.com/a",
        "http://example.com/dir/b?x=1&y=2",
        "http://other.com/",
        "http://example.com/area",
        "http://cdn.example.net/frame",
        "http://example.com/dir/frame.html",
    ]


def test_dedup_keeps_document_order() -> None:
    body = html('<a href="/x">1</a><a href="/y">2</a><a href="/x#f">3</a><a href="HTTP://EXAMPLE.COM/x">4</a>')
    assert extract(body, PAGE).urls == ["http://example.com/x", "http://example.com/y"]


def test_rejected_counts_by_reason() -> None:
    long_href = "/" + "a" * 8192  # an 8 KB URL
    body = html(
        '<a href="javascript:void(0)">j</a><a href="mailto:a@b.c">m</a><a href="tel:1">t</a>'
        f'<a href="{long_href}">long</a><a href="http://">nohost</a>'
        '<a href="http://bad host/">bad</a><a>no href</a><a href="/ok">ok</a>'
    )
    out = extract(body, PAGE)
    assert out.urls == ["http://example.com/ok"]
    assert out.rejected == {"scheme": 3, "too_long": 1, "no_host": 1, "malformed": 1}


def test_nofollow_anchors_are_kept() -> None:
    out = extract(html('<a rel="nofollow noopener" href="/n">n</a>'), PAGE)
    assert out.urls == ["http://example.com/n"]
    assert out.nofollow is False


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("noindex, nofollow", True),
        ("NOFOLLOW", True),
        ("none", True),
        ("noindex,follow", False),
        ("index", False),
        ("", False),
    ],
)
def test_meta_robots_nofollow(content: str, expected: bool) -> None:
    out = extract(html('<a href="/x">x</a>', head=f'<meta name="ROBOTS" content="{content}">'), PAGE)
    assert out.nofollow is expected
    assert out.urls == ["http://example.com/x"]


def test_base_href_is_honoured() -> None:
    out = extract(html('<a href="x">x</a>', head='<base href="https://cdn.example.org/root/">'), PAGE)
    assert out.base_url == "https://cdn.example.org/root/"
    assert out.urls == ["https://cdn.example.org/root/x"]


def test_relative_base_href_resolves_against_page() -> None:
    out = extract(html('<a href="x">x</a>', head='<base href="/other/">'), PAGE)
    assert out.base_url == "http://example.com/other/"
    assert out.urls == ["http://example.com/other/x"]


@pytest.mark.parametrize("base", ["javascript:alert(1)", "ftp://example.com/", "data:,x", ""])
def test_non_http_base_is_ignored(base: str) -> None:
    out = extract(html('<a href="x">x</a>', head=f'<base href="{base}">'), PAGE)
    assert out.base_url == PAGE
    assert out.urls == ["http://example.com/dir/x"]


def test_only_first_base_counts() -> None:
    head = '<base href="http://one.com/"><base href="http://two.com/">'
    assert extract(html('<a href="x">x</a>', head=head), PAGE).urls == ["http://one.com/x"]


def test_whitespace_and_percent_variants_in_href() -> None:
    body = html(
        '<a href="  /a b\n c  ">1</a>'
        '<a href="/%7Euser">2</a><a href="/~user">3</a>'
        '<a href="/caf%c3%a9">4</a><a href="/caf\u00e9">5</a>'
        '<a href="/q?a=1&amp;b=%2f">6</a>'
    )
    assert extract(body, PAGE).urls == [
        "http://example.com/a%20b%20c",
        "http://example.com/~user",
        "http://example.com/caf%C3%A9",
        "http://example.com/q?a=1&b=%2F",
    ]


def test_protocol_relative_links_follow_page_scheme() -> None:
    out = extract(html('<a href="//other.com/p">p</a>'), "https://example.com/")
    assert out.urls == ["https://other.com/p"]


def test_title_and_description_limits() -> None:
    head = f'<title>{"t" * 2000}</title><meta name=description content="{"d " * 2000}">'
    out = extract(html("", head=head), PAGE)
    assert len(out.title) == MAX_TITLE
    assert len(out.description) == MAX_DESCRIPTION


def test_missing_title_and_description() -> None:
    out = extract(html("<p>no head</p>"), PAGE)
    assert out.title == ""
    assert out.description == ""


def test_max_links() -> None:
    body = html("".join(f'<a href="/{i}">{i}</a>' for i in range(10)) + '<a href="/0">dup</a>')
    out = extract(body, PAGE, max_links=3)
    assert out.urls == ["http://example.com/0", "http://example.com/1", "http://example.com/2"]
    # The rest is kept, to be recorded as not followed (crawlcore.services.extract_follow), and the page says so.
    assert [link.url for link in out.over_limit] == [f"http://example.com/{i}" for i in range(3, 10)]
    assert out.rejected == {} and out.limits == ["links"]
    assert OVER_LIMIT == "over_limit"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<",
        b"<a href=",
        b"<html><head><title>Trunc",
        b'<a href="/ok">ok</a><a href="/tru',
        b"<<<>>><a <a href='/x'>>>></a",
        b"\x00\x01\x02\xff\xfe\xfd" * 100,
        bytes(range(256)) * 4,
        b"\xef\xbb\xbf<title>bom</title>",
        b"<svg><a href='/svg'>s</a></svg><math><title>m</title></math>",
    ],
)
def test_malformed_input_never_raises(body: bytes) -> None:
    out = extract(body, PAGE)
    assert isinstance(out, Extracted)
    assert all(link.startswith("http") for link in out.urls)


def test_random_bytes_never_raise() -> None:
    for _ in range(20):
        chunk = os.urandom(2048) + b'<a href="/r">r</a>' + os.urandom(512)
        extract(chunk, PAGE, content_type="text/html; charset=utf-8")


def test_truncated_document_keeps_earlier_links() -> None:
    out = extract(b'<html><title>T</title><a href="/ok">ok</a><a href="/tru', PAGE)
    assert out.title == "T"
    assert "http://example.com/ok" in out.urls


def test_charset_from_content_type() -> None:
    body = "<title>caf\u00e9 \u20ac</title>".encode("cp1252")
    out = extract(body, PAGE, content_type="text/html; charset=windows-1252")
    assert out.title == "caf\u00e9 \u20ac"


def test_charset_detected_from_meta_without_header() -> None:
    body = b'<meta charset="iso-8859-1"><title>caf\xe9</title>'
    assert extract(body, PAGE).title == "caf\u00e9"


@pytest.mark.parametrize("ctype", ["text/html; charset=bogus-enc", "text/html; charset=", 'text/html; charset="utf-8'])
def test_invalid_charset_does_not_crash(ctype: str) -> None:
    out = extract("<title>ok \u00e9</title>".encode(), PAGE, content_type=ctype)
    assert out.title.startswith("ok")


def test_invalid_page_url_does_not_crash() -> None:
    out = extract(html('<a href="http://x.com/">x</a><a href="rel">r</a>'), "not a url")
    assert out.urls == ["http://x.com/"]
    assert out.rejected == {"malformed": 1}


def test_broken_ipv6_href_is_rejected_not_raised() -> None:
    out = extract(html('<a href="//[::1/x">v6</a><a href="http://[zz]/">v6</a><a href="/ok">ok</a>'), PAGE)
    assert out.urls == ["http://example.com/ok"]
    assert out.rejected == {"malformed": 2}


def test_each_link_keeps_element_anchor_text_and_nofollow() -> None:
    body = html(
        '<a href="/t">  Plain\n  <b>bold</b>  text </a>'
        '<a href="/img-link"><img src="/i.png" alt=" The  logo "></a>'
        '<a rel="Nofollow noopener" href="/nf">nf</a>'
        '<map><area href="/area" alt="Region"></map><iframe src="/frame"></iframe>',
        head='<link rel="stylesheet" href="/s.css"><link rel="preconnect" href="https://cdn.example.net">'
        '<script src="/a.js"></script>',
    )
    got = [(f.url.rsplit("/", 1)[1], f.element, f.text, f.nofollow, f.resource) for f in extract(body, PAGE).links]
    assert got == [
        ("s.css", "link href", "", False, True),
        ("a.js", "script src", "", False, True),
        ("t", "a href", "Plain bold text", False, False),
        ("img-link", "a href", "The logo", False, False),
        ("i.png", "img src", "The logo", False, True),
        ("nf", "a href", "nf", True, False),
        ("area", "area href", "Region", False, False),
        ("frame", "iframe src", "", False, False),
    ]


def test_anchor_text_is_bounded_and_fragment_kept() -> None:
    out = extract(html(f'<a href="/x#Sec%202">{"word " * 100}</a>'), PAGE)
    (link,) = out.links
    assert len(link.text) == MAX_ANCHOR_TEXT
    assert (link.url, link.fragments) == ("http://example.com/x", [("Sec%202", link.text)])


def test_each_fragment_of_a_target_keeps_its_own_text() -> None:
    out = extract(
        html('<a href="/x">X</a><a href="/x#a">To A</a><a href="/x#b">To B</a><a href="/x#a">A again</a>'), PAGE
    )
    (link,) = out.links
    assert (link.text, link.fragments) == ("X", [("a", "To A"), ("b", "To B")])


def test_duplicate_link_takes_text_from_a_later_occurrence() -> None:
    out = extract(html('<a href="/x"><span></span></a><a href="/x">Later</a>'), PAGE)
    assert [(f.url, f.text) for f in out.links] == [("http://example.com/x", "Later")]


def test_page_anchors_are_ids_and_a_names() -> None:
    body = html('<h2 id="one">1</h2><a name="two">2</a><div name="not-a-target"></div><p id="one"></p>')
    assert extract(body, PAGE).anchors == ["one", "two"]
