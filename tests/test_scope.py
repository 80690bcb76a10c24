from __future__ import annotations

import pytest

from crawler.scope import Scope, registered_domain


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.example.co.kr", "example.co.kr"),
        ("a.b.example.com", "example.com"),
        ("cs.snu.ac.kr", "snu.ac.kr"),
        ("127.0.0.5", "127.0.0.5"),
        ("localhost", "localhost"),
        ("WWW.Example.COM", "example.com"),
    ],
)
def test_registered_domain_offline(host, domain):
    assert registered_domain(host) == domain


def test_host_scope_stays_on_the_host():
    s = Scope.for_seed("host", "www.example.com")
    assert s.follow("www.example.com", offsite_depth=5) == s
    assert s.follow("blog.example.com", offsite_depth=5) is None


def test_domain_scope_allows_sibling_hosts_only():
    s = Scope.for_seed("domain", "www.example.co.kr")
    assert s.follow("news.example.co.kr", offsite_depth=5) is not None
    assert s.follow("other.co.kr", offsite_depth=5) is None


def test_any_scope_follows_offsite_up_to_the_depth_and_resets_on_return():
    s = Scope.for_seed("any", "www.example.com")
    one = s.follow("a.org", offsite_depth=2)
    two = one.follow("b.net", offsite_depth=2)
    assert (one.offsite_hops, two.offsite_hops) == (1, 2)
    assert two.follow("c.io", offsite_depth=2) is None
    assert two.follow("example.com", offsite_depth=2).offsite_hops == 0


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="expected one of host, domain, any"):
        Scope.for_seed("planet", "x.com")
