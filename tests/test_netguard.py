from __future__ import annotations

import ipaddress
import socket

import pytest

from crawler import netguard
from crawler.netguard import forbidden_reason, parse_cidrs, resolve


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
    assert resolve("127.0.0.1", 80) == ["127.0.0.1"]
    assert resolve("[::1]", 443) == ["::1"]


def test_resolve_dedupes_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert (host, port) == ("example.test", 8080)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", port)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fe80::1%eth0", port, 0, 2)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.2", port)),
        ]

    monkeypatch.setattr(netguard.socket, "getaddrinfo", fake_getaddrinfo)
    assert resolve("example.test", 8080) == ["10.0.0.2", "fe80::1", "10.0.0.1"]


def test_resolve_failure_raises_oserror(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(netguard.socket, "getaddrinfo", failing)
    with pytest.raises(OSError):
        resolve("nonexistent.invalid", 80)


def test_resolve_empty_result_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netguard.socket, "getaddrinfo", lambda *a, **k: [])
    with pytest.raises(OSError):
        resolve("empty.test", 80)


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
