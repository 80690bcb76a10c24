from __future__ import annotations

import ipaddress
import socket
import threading
import time

import pytest

from crawler import lookup
from crawler.http import FailureKind
from crawler.netguard import forbidden_reason, parse_cidrs
from crawler.resolve import Unresolved, resolve_allowed


def test_parse_cidrs() -> None:
    nets = parse_cidrs("127.0.0.0/8, ::1  10.1.2.3/8,\n192.168.1.5")
    assert nets == (
        ipaddress.ip_network("127.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("192.168.1.5/32"),
    )


@pytest.mark.parametrize("text", ["", "   ", " , ,"])
def test_parse_cidrs_empty(text: str) -> None:
    assert parse_cidrs(text) == ()


@pytest.mark.parametrize("bad", ["localhost", "10.0.0.0/33", "300.1.1.1", "::1/129"])
def test_parse_cidrs_names_bad_entry(bad: str) -> None:
    with pytest.raises(ValueError, match=bad.replace(".", r"\.")):
        parse_cidrs(f"127.0.0.1, {bad}")


@pytest.mark.parametrize(
    ("ip", "reason"),
    [
        ("8.8.8.8", None),
        ("93.184.216.34", None),
        ("2606:4700:4700::1111", None),
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.0.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link_local"),
        ("fe80::1", "link_local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "reserved"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("::ffff:0.0.0.0", "unspecified"),
        ("not-an-ip", "invalid"),
        ("", "invalid"),
        ("1.2.3.4.5", "invalid"),
    ],
)
def test_forbidden_reason(ip: str, reason: str | None) -> None:
    assert forbidden_reason(ip, ()) == reason


def test_allowed_networks_override() -> None:
    allowed = parse_cidrs("127.0.0.0/8, 10.0.0.0/24")
    assert forbidden_reason("127.0.0.1", allowed) is None
    assert forbidden_reason("::ffff:127.0.0.1", allowed) is None
    assert forbidden_reason("10.0.0.7", allowed) is None
    assert forbidden_reason("10.0.1.7", allowed) == "private"
    # An IPv4 allow-list must not open up IPv6 loopback.
    assert forbidden_reason("::1", allowed) == "loopback"
    assert forbidden_reason("garbage", allowed) == "invalid"


def test_allowed_public_addresses_still_fine() -> None:
    assert forbidden_reason("8.8.8.8", parse_cidrs("127.0.0.1")) is None


def test_resolve_numeric_without_network() -> None:
    assert resolve_allowed("127.0.0.1", 80, guard=None, deadline=1.0) == ("127.0.0.1",)
    assert resolve_allowed("[::1]", 443, guard=None, deadline=1.0) == ("::1",)


def _answers(monkeypatch: pytest.MonkeyPatch, answer) -> None:
    monkeypatch.setattr(lookup, "getaddrinfo", answer)  # what the resolver pool's lookups call


def test_resolve_dedupes_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert (host, port) == ("example.test", 8080)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", port)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fe80::1%eth0", port, 0, 2)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", port)),
        ]

    _answers(monkeypatch, fake_getaddrinfo)
    assert resolve_allowed("example.test", 8080, guard=None, deadline=2.0) == ("10.0.0.2", "fe80::1", "10.0.0.1")


def test_only_the_addresses_the_guard_allows_are_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    def mixed(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in ("10.0.0.1", "93.184.216.34")]

    _answers(monkeypatch, mixed)
    guard = lambda ip: forbidden_reason(ip, ())  # noqa: E731
    assert resolve_allowed("mixed.test", 80, guard=guard, deadline=2.0) == ("93.184.216.34",)
    with pytest.raises(Unresolved) as refused:
        resolve_allowed("mixed.test", 80, guard=lambda ip: "private", deadline=2.0)
    assert refused.value.kind == FailureKind.FORBIDDEN_ADDRESS and "10.0.0.1" not in refused.value.detail


def test_resolve_failure_raises_oserror(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    _answers(monkeypatch, failing)
    with pytest.raises(OSError) as failed:
        resolve_allowed("nonexistent.invalid", 80, guard=None, deadline=2.0)
    assert failed.value.kind == FailureKind.DNS


def test_resolve_empty_result_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    _answers(monkeypatch, lambda *a, **k: [])
    with pytest.raises(OSError):
        resolve_allowed("empty.test", 80, guard=None, deadline=2.0)


def test_a_name_that_never_answers_fails_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()
    _answers(monkeypatch, lambda *a, **k: gate.wait(5.0) and [])
    started = time.monotonic()
    try:
        with pytest.raises(Unresolved, match="no answer within 0.3s"):
            resolve_allowed("hangs.test", 80, guard=None, deadline=0.3)
        assert time.monotonic() - started < 2.0
    finally:
        gate.set()


def test_a_refused_name_does_not_tell_what_it_resolves_to():
    """The detail lands in check records any reader sees: naming the address would make every job seed or
    health URL a lookup of internal names."""
    from crawler.http import FailureKind, FetchResult
    from crawler.resolve import resolve_checked

    found = resolve_checked("http://localhost:9/", method="GET", check=lambda ip: forbidden_reason(ip, ()),
                            dns_timeout=5.0)  # fmt: skip
    assert isinstance(found, FetchResult) and found.failure == FailureKind.FORBIDDEN_ADDRESS
    text = found.detail
    assert "localhost" in text and "127.0.0.1" not in text and "loopback" not in text
