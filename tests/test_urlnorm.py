from __future__ import annotations

import pytest

from crawler.urlnorm import MAX_URL_LENGTH, ServerKey, UrlError, canonicalize, server_key


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://ExAmple.COM", "http://example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:8080", "http://example.com:8080/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("http://example.com/#frag", "http://example.com/"),
        ("http://example.com/?b=2&a=1&a=0", "http://example.com/?a=0&a=1&b=2"),
        ("http://example.com/?a=&b", "http://example.com/?a=&b="),
        ("http://example.com/%7euser/%2f", "http://example.com/~user/%2F"),
        ("http://example.com/?q=%e2%82%ac", "http://example.com/?q=%E2%82%AC"),
        ("http://example.com/r\u00e9sum\u00e9", "http://example.com/r%C3%A9sum%C3%A9"),
        ("http://b\u00fccher.de/", "http://xn--bcher-kva.de/"),
        ("http://example.com/a/../b/./c", "http://example.com/b/c"),
        ("  http://example.com/a\n b\t\r  ", "http://example.com/a%20b"),
        ("http://Example.com./x", "http://example.com/x"),
        ("http://[::1]:80/x", "http://[::1]/x"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://user:pw@Example.com:80/", "http://example.com/"),  # credentials are never part of a URL
        ("http://user@example.com/a", "http://example.com/a"),
        ("http://:@example.com/a", "http://example.com/a"),
        ("http://example.com:/", "http://example.com/"),
        ("http://exa_mple.com/", "http://exa_mple.com/"),
    ],
)
def test_canonicalize(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected


@pytest.mark.parametrize(
    ("url", "base", "expected"),
    [
        ("../c?x=1#y", "http://h.com/a/b/", "http://h.com/a/c?x=1"),
        ("//cdn.example.com/x", "https://h.com/page", "https://cdn.example.com/x"),
        ("/abs", "http://h.com/a/b", "http://h.com/abs"),
        ("", "http://h.com/a?b=1", "http://h.com/a?b=1"),
        ("#top", "http://h.com/a", "http://h.com/a"),
        ("?q=1", "http://h.com/a", "http://h.com/a?q=1"),
        ("http://other.com/", "http://h.com/a", "http://other.com/"),
        (" /a\nb ", " http://h.com/ ", "http://h.com/ab"),
    ],
)
def test_canonicalize_with_base(url: str, base: str, expected: str) -> None:
    assert canonicalize(url, base=base) == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("javascript:void(0)", "scheme"),
        ("mailto:a@b.com", "scheme"),
        ("data:text/html,hi", "scheme"),
        ("ftp://example.com/", "scheme"),
        ("tel:+123", "scheme"),
        ("http:///path", "no_host"),
        ("http://", "no_host"),
        ("/relative/without/base", "malformed"),
        ("example.com/x", "malformed"),
        ("http://example.com:99999/", "malformed"),
        ("http://example.com:abc/", "malformed"),
        ("http://a..b/", "malformed"),
        ("http://ex ample.com/", "malformed"),
        ("http://" + "a" * 64 + ".com/", "malformed"),
        ("http://[::1/", "malformed"),
        ("http://example.com/" + "a" * MAX_URL_LENGTH, "too_long"),
    ],
)
def test_canonicalize_rejects(raw: str, reason: str) -> None:
    with pytest.raises(UrlError) as info:
        canonicalize(raw)
    assert info.value.reason == reason
    assert isinstance(info.value, ValueError)


def test_rejects_relative_scheme_against_base() -> None:
    with pytest.raises(UrlError) as info:
        canonicalize("javascript:alert(1)", base="http://h.com/")
    assert info.value.reason == "scheme"


def test_too_long_after_percent_encoding() -> None:
    # 700 non-ASCII chars fit the limit raw but triple in size once encoded.
    raw = "http://example.com/" + "\u00e9" * 700
    with pytest.raises(UrlError) as info:
        canonicalize(raw)
    assert info.value.reason == "too_long"


def test_max_length_is_accepted() -> None:
    prefix = "http://example.com/"
    url = prefix + "a" * (MAX_URL_LENGTH - len(prefix))
    assert canonicalize(url) == url


IDEMPOTENCE_CASES = [
    "HTTP://WWW.Example.COM:80/a/b/../c/./d?z=1&a=2&a=1#x",
    "https://example.com:443",
    "http://example.com/?q=a+b&r=a%20b&s=%2B",
    "http://example.com/%zz/%41%42?%zz=1",
    "http://example.com/?a=%e9&b=%C3%A9",
    "http://b\u00fccher.de/\u00fc?\u00fc=\u00fc",
    "http://example.com/;params?x",
    "http://example.com/a%2Fb%3f?c=%26&d=%3D",
    "http://[::FFFF:127.0.0.1]:80/",
    "http://[2001:DB8::1]:8443/x",
    "http://user:p%40ss@example.com/",
    "http://example.com/path with spaces/?q=with spaces",
    "http://example.com/?",
    "http://example.com/#",
    "http://example.com/~user/!$&'()*+,;=:@/",
    "http://example.com/?a=1&&b=2&",
    "http://example.com/%E2%82%AC/%e2%82%ac",
    "http://example.com/./../../x",
    "http://EXAMPLE.com.:8080/",
    "http://example.com/\u0000x",
]


@pytest.mark.parametrize("raw", IDEMPOTENCE_CASES)
def test_idempotent(raw: str) -> None:
    once = canonicalize(raw)
    assert canonicalize(once) == once
    # Resolving an absolute URL against any base must not change it either.
    assert canonicalize(once, base="http://other.org/x/") == once


def test_server_key() -> None:
    assert server_key("http://example.com/a") == ServerKey("http", "example.com", 80)
    assert server_key("https://example.com/a") == ServerKey("https", "example.com", 443)
    assert server_key("http://user@example.com:8080/") == ServerKey("http", "example.com", 8080)
    assert server_key("http://[::1]:8080/") == ServerKey("http", "::1", 8080)


def test_server_key_origin() -> None:
    assert ServerKey("http", "example.com", 80).origin() == "http://example.com"
    assert ServerKey("https", "example.com", 443).origin() == "https://example.com"
    assert ServerKey("https", "example.com", 80).origin() == "https://example.com:80"
    assert ServerKey("http", "::1", 8080).origin() == "http://[::1]:8080"
    assert ServerKey("http", "::1", 80).origin() == "http://[::1]"


def test_server_key_is_hashable() -> None:
    assert len({server_key("http://a.com/x"), server_key("http://a.com:80/y")}) == 1


@pytest.mark.parametrize(
    ("url", "base", "reason"),
    [
        ("http://", "http://h.com/a", "no_host"),  # must not silently become the base
        ("//[::1/x", "http://h.com/", "malformed"),
        ("/x", "http://[::1/", "malformed"),
        ("x", "", "malformed"),
        ("localhost:8080/x", "http://h.com/", "scheme"),  # browsers read "localhost:" as a scheme
    ],
)
def test_canonicalize_with_base_rejects(url: str, base: str, reason: str) -> None:
    with pytest.raises(UrlError) as info:
        canonicalize(url, base=base)
    assert info.value.reason == reason


def test_idempotent_generated_variants() -> None:
    # Deterministic cross product of the awkward parts a URL can have.
    import itertools

    hosts = ["Example.COM", "b\u00fccher.de", "[::1]", "127.0.0.1", "a.b.c."]
    ports = ["", ":80", ":443", ":8080", ":"]
    paths = ["", "/", "/a/../b/", "/%7e%2F%20x", "/\u00e9 \u00fc", "/a;b=c", "/./%zz"]
    queries = ["", "?", "?b=1&a=2", "?a=%e9&a=+&c", "?q=a b&q=%2B", "?%zz=&&"]
    frags = ["", "#", "#x y"]
    count = 0
    for scheme, host, port, path, query, frag in itertools.product(
        ["http", "HTTPS"], hosts, ports, paths, queries, frags
    ):
        raw = f"{scheme}://{host}{port}{path}{query}{frag}"
        once = canonicalize(raw)
        assert canonicalize(once) == once, raw
        assert "#" not in once
        count += 1
    assert count > 1000
