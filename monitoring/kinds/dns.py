"""A DNS check (dnspython): resolve a name's records of one type and compare them with the expected set.

Its own failure kinds, stored as the check's failure kind:

* ``nxdomain``      the name does not exist                                   -> error
* ``no_answer``     the name exists but has no record of that type            -> error
* ``servfail``      every nameserver failed or refused the query              -> error
* ``records``       an answer, but not the expected record set                -> error
* ``dns_timeout``   no answer within CRAWL_DNS_TIMEOUT                        -> disconnect
* ``forbidden_address`` the nameserver asked for is on a private address       -> disconnect
* ``no_resolver``   no nameserver configured on this machine                  -> disconnect

A matching answer is normal, or delay when it took longer than the delay threshold.

No Django or Celery import.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import dns.exception
import dns.name
import dns.rdatatype
import dns.resolver

from crawler.http import AddressCheck, FailureKind, Timings
from crawler.sanitize import clean_line
from crawler.status import Category

from . import KindResult, result_of, timed_category

RECORD_TYPES = ("A", "AAAA", "CNAME", "MX", "NS", "TXT", "SOA", "CAA", "SRV", "PTR")


class DnsSpecError(ValueError):
    pass


@dataclass(frozen=True)
class DnsSpec:
    name: str
    record_type: str = "A"
    expected: frozenset[str] = frozenset()  # empty: any answer will do
    nameserver: str = ""  # "ip" or "ip:port"; empty: the system's resolvers

    @property
    def target(self) -> str:
        return f"dns://{self.name}/{self.record_type}"


def dns_name_check(text: str) -> str:
    """The name as stored (lower case, no trailing dot); a clear message when it is not a DNS name."""
    name = text.strip().rstrip(".").lower()
    if not name or len(name) > 253 or any(c.isspace() or ord(c) < 33 for c in name):
        raise DnsSpecError(f"{text!r} is not a DNS name")
    try:
        dns.name.from_text(name)
    except (dns.exception.DNSException, UnicodeError) as exc:
        raise DnsSpecError(f"{text!r} is not a DNS name ({exc})") from None
    return name


def record_type_check(text: str) -> str:
    rtype = (text or "A").strip().upper()
    if rtype not in RECORD_TYPES:
        raise DnsSpecError(f"record type {text!r}: one of {', '.join(RECORD_TYPES)}")
    return rtype


def record_normal(text: str) -> str:
    """One record as compared: lower case, no trailing dot, TXT without its quotes."""
    return text.strip().strip('"').rstrip(".").lower()


def expected_parse(text: str) -> frozenset[str]:
    """``"192.0.2.1, 192.0.2.2"`` -> the set compared with the answer."""
    return frozenset(record_normal(p) for p in text.split(",") if p.strip())


def nameserver_parse(text: str) -> tuple[str, int] | None:
    text = text.strip()
    if not text:
        return None
    host, sep, port = text.rpartition(":") if text.count(":") == 1 or text.startswith("[") else ("", "", "")
    host = (host if sep else text).strip("[]")
    if sep and (not port.isdigit() or not 1 <= int(port) <= 65535):
        raise DnsSpecError(f"nameserver {text!r}: not ip[:port]")
    return host, int(port) if sep else 53


def dns_check(spec: DnsSpec, *, timeout: float, guard: AddressCheck | None, threshold_s: float) -> KindResult:
    """One lookup; never raises for a network reason."""
    started_wall, t0 = time.time(), time.monotonic()

    def done(category: Category, failure: str = "", detail: str = "", n: int = 0, peer: str | None = None):
        total = (time.monotonic() - t0) * 1000
        kind = FailureKind.DNS if category is Category.DISCONNECT and failure != "forbidden_address" else None
        if failure == "forbidden_address":
            kind = FailureKind.FORBIDDEN_ADDRESS
        timings = Timings(total, None, None, None, total)
        result = result_of(spec.target, "DNS", timings=timings, detail=detail, failure=kind, received=n, peer_ip=peer)
        return KindResult(started_wall, result, category, failure, detail[:300])

    try:
        server = nameserver_parse(spec.nameserver)
    except DnsSpecError as exc:
        return done(Category.ERROR, "bad_settings", str(exc))
    if server is not None and guard is not None and (why := guard(server[0])):
        return done(Category.DISCONNECT, "forbidden_address", f"nameserver {server[0]} is a {why} address")
    try:
        resolver = dns.resolver.Resolver(configure=server is None)
    except dns.resolver.NoResolverConfiguration:
        return done(Category.DISCONNECT, "no_resolver", "no nameserver configured on this machine")
    if server is not None:
        resolver.nameservers, resolver.port = [server[0]], server[1]
    peer = server[0] if server else None
    try:
        answer = resolver.resolve(spec.name, spec.record_type, lifetime=timeout, search=False)
    except dns.resolver.NXDOMAIN:
        return done(Category.ERROR, "nxdomain", f"{spec.name} does not exist (NXDOMAIN)", peer=peer)
    except dns.resolver.NoAnswer:
        return done(Category.ERROR, "no_answer", f"{spec.name} has no {spec.record_type} record", peer=peer)
    except dns.resolver.NoNameservers as exc:
        return done(Category.ERROR, "servfail", clean_line(f"no nameserver answered: {exc}", 300), peer=peer)
    except dns.exception.Timeout:
        return done(Category.DISCONNECT, "dns_timeout", f"no answer within {timeout:g}s", peer=peer)
    except (dns.exception.DNSException, OSError, ValueError) as exc:
        return done(Category.DISCONNECT, "dns_error", clean_line(f"lookup failed: {exc}", 300), peer=peer)
    got = frozenset(record_normal(r.to_text()) for r in answer)
    if spec.expected and got != spec.expected:
        shown = ", ".join(sorted(got))[:120]
        detail = f"{spec.record_type} records {shown!r}, expected {', '.join(sorted(spec.expected))!r}"
        return done(Category.ERROR, "records", clean_line(detail, 300), len(got), peer)
    asked = spec.nameserver or "the system resolver"
    answer_text = clean_line(f"{spec.record_type} {', '.join(sorted(got))} (asked {asked})", 300)
    passed = done(Category.NORMAL, detail=answer_text, n=len(got), peer=peer)
    category = timed_category(passed.result.timings.total_ms, threshold_s)
    return KindResult(passed.started_at, passed.result, category, detail=passed.detail)
