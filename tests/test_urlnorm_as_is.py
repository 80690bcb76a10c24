"""crawler.urlnorm's quick path: a URL it takes as already canonical is one that w3lib's canonicalisation and the
policy's checks return unchanged, so no URL gets a second spelling (and a second row) through it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.urlnorm import UrlError, _as_is, _canonical_slow, canonicalize

# Characters near the quick path's edges: its own, and the ones w3lib encodes, decodes, lowercases or sorts.
_CHARS = "aZ09_-.~/%?&=#:@+;,!$'()*[] éÄ\\"
_HOSTS = ["a.example", "s12.example", "A.example", "a..example", "a.example.", "xn--p1ai.example",
          "a_b.example", "-a.example", "a-.example", "127.0.0.1", "a.example:80", "a.example:8080", "u@a.example",
          "[::1]", "ex.xn--p1ai", "é.example"]  # fmt: skip


@st.composite
def _urls(draw) -> str:
    """Mostly URLs near the quick path (plain paths and queries, the hosts above), with now and then a character
    from anywhere in _CHARS inside or after them."""
    scheme = draw(st.sampled_from(["http", "https", "http", "https", "HTTP", "ftp"]))
    host = draw(st.sampled_from(_HOSTS))
    path = draw(st.text(alphabet="aZ09_-.~/", max_size=20))
    query = draw(st.none() | st.text(alphabet="a0_-.=&", max_size=12))
    odd = draw(st.text(alphabet=_CHARS, max_size=2))
    at = draw(st.integers(min_value=0, max_value=len(path)))
    path = path[:at] + (odd if draw(st.booleans()) else "") + path[at:]
    return f"{scheme}://{host}{'/' if draw(st.booleans()) else ''}{path}{'' if query is None else '?' + query}"


def _slow(url: str) -> str | None:
    try:
        return _canonical_slow(url)
    except UrlError:
        return None


@settings(max_examples=3000, deadline=None)
@given(_urls())
def test_a_url_taken_as_is_is_what_the_full_canonicalisation_returns(url):
    if _as_is(url):
        assert _slow(url) == url


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(st.text("ab.-_0", min_size=1, max_size=3), st.text("ab.-_0", max_size=3)), max_size=4))
def test_a_query_is_taken_as_is_only_when_its_pairs_are_in_order(pairs):
    url = "http://a.example/p" + ("?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else "")
    if _as_is(url):
        assert _slow(url) == url


@pytest.mark.parametrize(
    "url",
    ["http://s1.example/p123", "https://a.b.example/x/y/", "http://a.example/", "http://a.example/x?a=1&b=2",
     "http://a_b.example/c-d/e.f~g", "http://127.0.1.8:8080/p/1.html", "https://a.example:80/"],
)  # fmt: skip
def test_plain_links_take_the_quick_path(url):
    assert _as_is(url) and canonicalize(url) == url == _slow(url)


@pytest.mark.parametrize(
    "url",
    ["http://a.example", "HTTP://a.example/", "http://A.example/", "http://a.example:80/", "http://a.example./",
     "http://a.example/./x", "http://a.example/x/../y", "http://a.example//x", "http://a.example/a%2fb",
     "http://a.example/x?b=1&a=2", "http://a.example/x?a", "http://a.example/x#f", "http://u@a.example/",
     "http://xn--p1ai.example/", "http://a.example/é", "https://a.example:443/", "http://a.example:080/",
     "http://a.example:65536/", "http://a.example:0/", "http://" + ".".join(["a" * 63] * 5) + "/"],
)  # fmt: skip
def test_anything_else_takes_the_full_canonicalisation(url):
    assert not _as_is(url)


@st.composite
def _plain_urls(draw) -> str:
    """URLs of the quick path's own shape, each segment and pair possibly ending in one odd character."""
    host = draw(st.sampled_from(["a.example", "s12.example", "a_b.example", "127.0.0.1", "w-1.x.example",
                                 "127.0.1.8:8080", "a.example:80", "a.example:443", "a.example:65536",
                                 "a.example:080", "a.example:1"]))  # fmt: skip
    word = st.text(alphabet="aZ09_-.~", min_size=1, max_size=8)
    odd = st.text(alphabet=_CHARS, max_size=1)
    segments = draw(st.lists(st.tuples(word, odd), max_size=4))
    pairs = draw(st.lists(st.tuples(word, word), max_size=3))
    path = "/" + "/".join(w + o for w, o in segments) + draw(st.sampled_from(["", "/"]))
    query = "?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else ""
    return f"{draw(st.sampled_from(['http', 'https']))}://{host}{path}{query}"


@settings(max_examples=3000, deadline=None)
@given(_plain_urls())
def test_a_plain_url_taken_as_is_is_what_the_full_canonicalisation_returns(url):
    if _as_is(url):
        assert _slow(url) == url
