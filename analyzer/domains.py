"""Domains of a crawl (pure; no Django): the top-level-domain classes of Table 2.1 of seed 001, the national
second-level domains (ac.kr, co.kr …), and Find_Active_Domain: the domains named by the URLs, e-mail
addresses and FTP addresses in a page, split into national, foreign names on national IP ranges, and
foreign.

Suffixes come from the public suffix list bundled with tldextract, never fetched.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import tldextract

__all__ = [
    "EMAIL",
    "FTP",
    "GENERIC_TLDS",
    "WEB",
    "HostInfo",
    "address_hosts",
    "domain_scope",
    "host_info",
    "in_networks",
    "national_sld",
    "page_domains",
    "tld_class",
]

# The rows of Table 2.1, in its order; every other TLD is a country code or "other".
GENERIC_TLDS = ("com", "edu", "gov", "net", "mil", "org")
COUNTRY_CODES = "country codes"
OTHER = "other"
TLD_CLASSES = (*GENERIC_TLDS, COUNTRY_CODES, OTHER)

# Where a page names a domain: a web URL (or the page's own host), an e-mail address, an FTP address.
WEB, EMAIL, FTP = "web", "email", "ftp"
SOURCES = (WEB, EMAIL, FTP)

# Scopes of an active domain (Find_Active_Domain).
NATIONAL = "national"
FOREIGN_NATIONAL_IP = "foreign_national_ip"
FOREIGN = "foreign"
SCOPES = (NATIONAL, FOREIGN_NATIONAL_IP, FOREIGN)

# A page naming more domains than this is a link farm or a directory; the first ones are kept.
MAX_DOMAINS_PER_PAGE = 1000

_extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z][A-Za-z0-9-]{0,62}"
# A URL's host, after an optional user:password@; the scheme tells web from FTP.
_URL_RE = re.compile(rf"\b(https?|ftp)://(?:[^\s/@\"'<>]{{0,200}}@)?({_HOST})", re.IGNORECASE)
# An e-mail address: the local part must not continue a word, a path or a URL ("x/a@b" is not one).
_EMAIL_RE = re.compile(rf"(?<![\w.%+/-])[\w.%+-]{{1,64}}@({_HOST})", re.IGNORECASE)
# An FTP server named without a scheme ("ftp.kaist.ac.kr"), as pages of the time did.
_FTP_HOST_RE = re.compile(rf"(?<![\w.@/-])(ftp\.{_HOST})", re.IGNORECASE)


@dataclass(frozen=True)
class HostInfo:
    tld: str  # last label ("kr", "com"); "" for an IP address
    suffix: str  # public suffix ("ac.kr", "com"); "" when none is known (an IP, "localhost")
    domain: str  # registered domain ("snu.ac.kr"); "" when there is none


@functools.lru_cache(maxsize=65536)
def host_info(host: str) -> HostInfo:
    """TLD, public suffix and registered domain of a host name (lower-cased; IPs have none)."""
    host = host.strip().strip("[]").rstrip(".").lower()
    if not host:
        return HostInfo("", "", "")
    try:
        ipaddress.ip_address(host)
        return HostInfo("", "", "")
    except ValueError:
        pass
    parts = _extract(host)
    tld = host.rsplit(".", 1)[-1] if "." in host else ""
    return HostInfo(tld, parts.suffix, parts.top_domain_under_public_suffix)


def tld_class(tld: str) -> str:
    """The Table 2.1 row of a TLD: com, edu, gov, net, mil, org, country codes, or other (other generic
    TLDs, IP addresses, names without a TLD)."""
    if tld in GENERIC_TLDS:
        return tld
    if len(tld) == 2 and tld.isascii() and tld.isalpha():
        return COUNTRY_CODES
    return OTHER


def national_sld(suffix: str, national_tld: str) -> str | None:
    """The national second-level domain of a public suffix: "ac.kr" for ac.kr, "seoul.kr" for seoul.kr,
    the TLD itself ("kr") for a name registered directly under it; None outside the national TLD."""
    if suffix == national_tld:
        return national_tld
    if suffix.endswith("." + national_tld):
        return suffix
    return None


def address_hosts(text: str) -> Iterable[tuple[str, str]]:
    """(host, source) for each URL, e-mail address and FTP address in `text` (HTML or plain text)."""
    for match in _URL_RE.finditer(text):
        yield match.group(2), FTP if match.group(1).lower() == "ftp" else WEB
    # URLs are blanked first, so "ftp://user:pw@host" is not also read as the address "pw@host".
    rest = _URL_RE.sub(" ", text)
    for match in _EMAIL_RE.finditer(rest):
        yield match.group(1), EMAIL
    for match in _FTP_HOST_RE.finditer(rest):
        yield match.group(1), FTP


def page_domains(text: str, own_host: str = "") -> dict[str, frozenset[str]]:
    """Registered domains a page names, each with the sources that named it. The page's own host counts
    as a web source (it served the page). Hosts without a registered domain (IPs, "localhost",
    "logo@2x.png") are skipped."""
    found: dict[str, set[str]] = {}
    hosts = address_hosts(text)
    if own_host:
        hosts = itertools.chain([(own_host, WEB)], hosts)
    for host, source in hosts:
        domain = host_info(host).domain
        if not domain:
            continue
        if domain not in found:
            if len(found) >= MAX_DOMAINS_PER_PAGE:
                continue
            found[domain] = set()
        found[domain].add(source)
    return {domain: frozenset(sources) for domain, sources in found.items()}


def in_networks(ip: str | None, networks: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    if not ip or not networks:
        return False
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return any(addr in net for net in networks)


def domain_scope(tld: str, ip: str | None, *, national_tld: str, networks: Sequence) -> str:
    """Find_Active_Domain's split: a name under the national TLD is national; any other name whose
    address is in a national IP range is a foreign name on a national IP; the rest is foreign."""
    if tld == national_tld:
        return NATIONAL
    if in_networks(ip, networks):
        return FOREIGN_NATIONAL_IP
    return FOREIGN
