"""Refuse to fetch from internal addresses (SSRF protection).

Hostnames are resolved first and every resulting address is checked, so a
public name pointing at 127.0.0.1 or at cloud metadata (169.254.169.254) is
caught.  Operators can allow specific internal ranges (e.g. a test site on
localhost) with an explicit CIDR list.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

__all__ = ["Network", "forbidden_reason", "parse_cidrs"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_SEPARATORS_RE = re.compile(r"[,\s]+")


def parse_cidrs(text: str) -> tuple[Network, ...]:
    """Parse "127.0.0.0/8, ::1 10.0.0.5" into networks; a bad entry raises ValueError."""
    networks: list[Network] = []
    for entry in _SEPARATORS_RE.split(text.strip()):
        if not entry:
            continue
        try:
            # strict=False: "10.1.2.3/8" is taken to mean 10.0.0.0/8 rather
            # than failing a settings check over host bits.
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError as exc:
            raise ValueError(f"invalid network {entry!r}: {exc}") from exc
    return tuple(networks)


def _parse_address(ip: str) -> Address | None:
    try:
        addr = ipaddress.ip_address(ip.strip().strip("[]"))
    except ValueError:
        return None
    # ::ffff:127.0.0.1 reaches the IPv4 loopback on dual-stack sockets, so
    # judge it as the IPv4 address it embeds.
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def _classify(addr: Address) -> str | None:
    # Order matters: 0.0.0.0 and ::1 are also "private"/"reserved" in
    # ipaddress, but the specific reason is more useful in error reports.
    checks = (
        ("unspecified", addr.is_unspecified),
        ("loopback", addr.is_loopback),
        ("link_local", addr.is_link_local),
        ("multicast", addr.is_multicast),
        # Before "private": ipaddress also lists 240.0.0.0/4 as private.
        ("reserved", addr.is_reserved),
        ("private", addr.is_private),
    )
    for reason, hit in checks:
        if hit:
            return reason
    # Anything else not globally routable (e.g. 100.64.0.0/10 CGNAT).
    return None if addr.is_global else "reserved"


def forbidden_reason(ip: str, allowed: Sequence[Network]) -> str | None:
    """None if ``ip`` may be contacted, otherwise why not."""
    addr = _parse_address(ip)
    if addr is None:
        return "invalid"
    # `in` across IP versions is simply False, so mixed lists are fine.
    if any(addr in net for net in allowed):
        return None
    return _classify(addr)
