"""Response data is made storable where it enters: no NUL or control characters, bounded text, integers
that fit a bigint or none (crawler.sanitize, used by both fetchers and the robots.txt reader)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from crawler.robots import robots_text, rules_from_response
from crawler.sanitize import (
    BIGINT_MAX,
    MAX_HEADER_NAME,
    MAX_HEADER_VALUE,
    clean_headers,
    clean_line,
    clean_text,
    header_int,
)

CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _storable(value: str) -> bool:
    """What PostgreSQL's text accepts: valid UTF-8, no NUL."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


@given(st.lists(st.tuples(st.text(), st.text()), max_size=30))
def test_cleaned_headers_are_storable_bounded_and_lower_case(items):
    headers = clean_headers(items)
    for name, value in headers.items():
        assert name and name == name.lower() and name == name.strip()
        assert len(name) <= MAX_HEADER_NAME and len(value) <= MAX_HEADER_VALUE
        assert _storable(name) and _storable(value)
        assert not CONTROL.search(name) and not CONTROL.search(value)


@given(st.text(), st.integers(min_value=0, max_value=10_000))
def test_clean_line_and_text_never_keep_nul_or_surrogates(value, limit):
    line, text = clean_line(value, limit), clean_text(value, limit)
    assert len(line) <= limit and len(text) <= limit
    assert _storable(line) and _storable(text)
    assert "\n" not in line


def test_a_header_value_with_nul_and_crlf_keeps_its_printable_part():
    assert clean_headers([("Content-Type", "text/html\x00; charset=utf-8\r\n")]) == {
        "content-type": "text/html; charset=utf-8"
    }


def test_a_header_name_of_only_controls_is_dropped():
    assert clean_headers([("\x00\x01", "x"), ("ETag", '"a"')]) == {"etag": '"a"'}


def test_integers_that_overflow_a_bigint_or_are_not_decimal_are_dropped():
    assert header_int(str(BIGINT_MAX)) == BIGINT_MAX
    assert header_int(str(BIGINT_MAX + 1)) is None
    assert header_int("9" * 40) is None
    assert header_int("-1") is None
    assert header_int("²") is None  # a Unicode digit is not an HTTP number
    assert header_int("0x10") is None
    assert header_int(" 42 , 42") == 42
    assert header_int(None) is None


@given(st.integers())
def test_header_int_is_within_range_or_none(n):
    got = header_int(str(n))
    assert got is None or 0 <= got <= BIGINT_MAX
    if 0 <= n <= BIGINT_MAX:
        assert got == n


def test_a_utf16_robots_txt_is_read_as_its_author_wrote_it():
    body = "User-agent: *\nDisallow: /private\n".encode("utf-16")  # with its byte-order mark
    assert robots_text(body) == "User-agent: *\nDisallow: /private\n"
    rules = rules_from_response(200, body)
    assert not rules.allowed("http://a.example/private/x", "crawladmin/1.0")
    assert rules.allowed("http://a.example/public", "crawladmin/1.0")


def test_robots_txt_with_nul_and_bad_bytes_keeps_its_parseable_rules():
    body = b"User-agent: *\x00\r\nDisallow: /a\xff\nDisallow: /b\n"
    text = robots_text(body)
    assert _storable(text) and "\x00" not in text
    rules = rules_from_response(200, body)
    assert not rules.allowed("http://a.example/b", "crawladmin")


@given(st.binary(max_size=2000))
def test_any_robots_body_becomes_storable_text(body):
    assert _storable(robots_text(body))
