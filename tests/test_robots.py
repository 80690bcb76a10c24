from __future__ import annotations

import pytest

from crawler.robots import (
    ALLOW_ALL,
    DISALLOW_ALL,
    MAX_ROBOTS_BYTES,
    PARSED,
    RobotsRules,
    product_token,
    rules_from_response,
    rules_from_text,
)

UA = "crawladmin/0.1 (+http://crawladmin.example/bot)"

ROBOTS = b"""\
User-agent: *
Disallow: /private/
Crawl-delay: 5

User-agent: crawladmin
Disallow: /admin
Allow: /admin/public
Disallow: /docs/
Allow: /docs/readme
Crawl-delay: 1.5
"""


@pytest.fixture
def rules() -> RobotsRules:
    return rules_from_response(200, ROBOTS)


def test_star_group_applies_to_other_agents(rules: RobotsRules) -> None:
    assert rules.kind == PARSED
    assert not rules.allowed("http://h.com/private/x", "otherbot/1.0")
    assert rules.allowed("http://h.com/public", "otherbot/1.0")
    assert rules.allowed("http://h.com/admin/x", "otherbot/1.0")


def test_specific_group_overrides_star(rules: RobotsRules) -> None:
    # The crawladmin group replaces "*" entirely, so /private/ is allowed for us.
    assert rules.allowed("http://h.com/private/x", UA)
    assert not rules.allowed("http://h.com/admin/settings", UA)


def test_allow_beats_disallow_by_longest_match(rules: RobotsRules) -> None:
    assert rules.allowed("http://h.com/admin/public/page", UA)
    assert rules.allowed("http://h.com/docs/readme.html", UA)
    assert not rules.allowed("http://h.com/docs/other", UA)


def test_agent_matching_accepts_bare_token_and_case(rules: RobotsRules) -> None:
    assert not rules.allowed("http://h.com/admin/x", "crawladmin")
    assert not rules.allowed("http://h.com/admin/x", "CrawlAdmin/2.0")


def test_crawl_delay_per_agent(rules: RobotsRules) -> None:
    assert rules.crawl_delay(UA) == 1.5
    assert rules.crawl_delay("otherbot") == 5.0
    assert rules_from_response(200, b"User-agent: *\nDisallow:\n").crawl_delay(UA) is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 429, 301, 302])
def test_4xx_and_stray_3xx_allow_all(status: int) -> None:
    rules = rules_from_response(status, b"User-agent: *\nDisallow: /\n")
    assert rules.kind == ALLOW_ALL
    assert rules.allowed("http://h.com/anything", UA)
    assert rules.crawl_delay(UA) is None


@pytest.mark.parametrize("status", [500, 502, 503, 504, None])
def test_5xx_and_no_response_disallow_all(status: int | None) -> None:
    rules = rules_from_response(status, b"")
    assert rules.kind == DISALLOW_ALL
    assert not rules.allowed("http://h.com/", UA)
    assert rules.crawl_delay(UA) is None


@pytest.mark.parametrize(
    "body",
    [b"", b"\x00\xff\xfe garbage {{{ <html><body>not robots</body></html>", b"Disallow /x\nfoo: bar\n"],
)
def test_garbage_allows_all(body: bytes) -> None:
    rules = rules_from_response(200, body)
    assert rules.kind == PARSED
    assert rules.allowed("http://h.com/x", UA)


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    rules = rules_from_response(200, b"User-agent: *\nDisallow: /caf\xe9\nDisallow: /secret\n")
    assert "\ufffd" in rules.text
    assert not rules.allowed("http://h.com/secret", UA)


def test_body_is_capped_at_500_kib() -> None:
    filler = b"# " + b"x" * 1000 + b"\n"
    body = filler * (MAX_ROBOTS_BYTES // len(filler) + 1) + b"User-agent: *\nDisallow: /\n"
    rules = rules_from_response(200, body)
    assert len(rules.text.encode()) <= MAX_ROBOTS_BYTES
    # The Disallow after the cap is ignored.
    assert rules.allowed("http://h.com/x", UA)


def test_rules_from_text_round_trip(rules: RobotsRules) -> None:
    cached = rules_from_text(rules.text)
    assert cached == rules
    assert not cached.allowed("http://h.com/admin/x", UA)


def test_rules_are_hashable_and_frozen(rules: RobotsRules) -> None:
    with pytest.raises(AttributeError):
        rules.kind = ALLOW_ALL  # type: ignore[misc]
    assert hash(rules) == hash(rules_from_text(rules.text))


@pytest.mark.parametrize(
    ("ua", "token"),
    [
        ("crawladmin/0.1 (+http://x)", "crawladmin"),
        ("crawladmin", "crawladmin"),
        ("  my-bot_2/1.0", "my-bot_"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1)", "Mozilla"),
        ("", ""),
        ("/1.0", ""),
    ],
)
def test_product_token(ua: str, token: str) -> None:
    assert product_token(ua) == token


def test_empty_user_agent_uses_star_group(rules: RobotsRules) -> None:
    assert not rules.allowed("http://h.com/private/x", "")
