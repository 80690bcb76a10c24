"""A domain's registration expiry from its registry's RDAP service (RFC 9083), over HTTPS: the pure part.

Which registry answers for a TLD comes from IANA's bootstrap file (RFC 9224, `dns.json`), or one base URL
set for every domain (MONITOR_RDAP_BASE_URL). A lookup that gets no usable answer says why, and the domain's
expiry is then *unknown*, never guessed.

No Django or Celery import: monitoring.services.domains keeps the answers (the cache) and tells alerts.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import tldextract

_extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)  # the bundled suffix list, never fetched
MAX_ANSWER_BYTES = 1_000_000


@dataclass(frozen=True)
class RdapAnswer:
    domain: str
    expires_at: datetime | None  # None: unknown, `error` says why
    registrar: str = ""
    error: str = ""


def registrable_domain(host: str) -> str | None:
    """``www.cs.uni.ac.kr`` -> ``uni.ac.kr``; None for an IP address or a name under no public suffix."""
    host = host.strip("[]").rstrip(".").lower()
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    found = _extract(host)
    return found.top_domain_under_public_suffix or None


def bootstrap_bases(document: Mapping) -> dict[str, str]:
    """TLD -> RDAP base URL (https only) from IANA's bootstrap file."""
    out: dict[str, str] = {}
    for entry in document.get("services", []) if isinstance(document, Mapping) else []:
        if not (isinstance(entry, list) and len(entry) == 2):
            continue
        tlds, urls = entry
        https = [u for u in urls if isinstance(u, str) and u.startswith("https://")]
        for tld in tlds if https else []:
            if isinstance(tld, str):
                out[tld.lower()] = https[0]
    return out


def base_for(domain: str, bases: Mapping[str, str]) -> str | None:
    """The base URL serving `domain`: the longest matching suffix in the bootstrap (``ac.kr`` before ``kr``)."""
    labels = domain.split(".")
    for i in range(len(labels)):
        base = bases.get(".".join(labels[i:]))
        if base:
            return base
    return None


def domain_url(base: str, domain: str) -> str:
    return f"{base.rstrip('/')}/domain/{domain}"


def _when(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def answer_parse(domain: str, body: bytes) -> RdapAnswer:
    """The expiry (the `expiration` event) and registrar of an RDAP domain answer."""
    try:
        document = json.loads(body[:MAX_ANSWER_BYTES].decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return RdapAnswer(domain, None, error="the registry's answer is not JSON")
    if not isinstance(document, dict):
        return RdapAnswer(domain, None, error="the registry's answer is not an RDAP domain")
    expires = None
    for event in document.get("events") or []:
        if isinstance(event, dict) and event.get("eventAction") == "expiration":
            expires = _when(event.get("eventDate"))
    registrar = ""
    for entity in document.get("entities") or []:
        if isinstance(entity, dict) and "registrar" in (entity.get("roles") or []):
            card = entity.get("vcardArray")
            if isinstance(card, list) and len(card) == 2 and isinstance(card[1], list):
                names = [f[3] for f in card[1] if isinstance(f, list) and len(f) == 4 and f[0] == "fn"]
                registrar = str(names[0])[:200] if names else ""
    if expires is None:
        return RdapAnswer(domain, None, registrar, "the registry gives no expiration date")
    return RdapAnswer(domain, expires, registrar)


Get = Callable[[str], tuple[int | None, bytes, str]]  # url -> (status, body, why it failed)


def rdap_lookup(domain: str, base: str | None, get: Get) -> RdapAnswer:
    """One domain's answer through `get` (the caller's guarded HTTPS client)."""
    if base is None:
        return RdapAnswer(domain, None, error="no RDAP service is known for this domain's TLD")
    if not base.startswith("https://"):
        return RdapAnswer(domain, None, error="RDAP is asked over HTTPS only")
    status, body, why = get(domain_url(base, domain))
    if status is None:
        return RdapAnswer(domain, None, error=f"registry unreachable: {why}"[:300])
    if status == 404:
        return RdapAnswer(domain, None, error="the registry does not know this domain")
    if status != 200:
        return RdapAnswer(domain, None, error=f"the registry answered HTTP {status}")
    return answer_parse(domain, body)
