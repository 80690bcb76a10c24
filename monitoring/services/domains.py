"""Domain registration expiry: the registrable domain of every monitored host looked up by RDAP over HTTPS
(monitoring.rdap), the answers kept MONITOR_RDAP_CACHE_HOURS (DomainExpiry rows), and what a lookup told
handed to alerts (monitoring.hooks.domains_seen) in the transaction that stores it.

The registry is contacted through the private-address guard, on the crawler's deadlines, with the CA bundle
every https client here uses; an unreachable registry leaves the domain's expiry unknown, saying why.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawler.http import ca_bundle
from crawler.resolve import Unresolved, resolve_allowed

from .. import hooks
from ..kinds import Kind
from ..models import DomainExpiry, ServerMonitor
from ..rdap import MAX_ANSWER_BYTES, RdapAnswer, base_for, bootstrap_bases, rdap_lookup, registrable_domain
from .trust import REFUSED, address_guard

BOOTSTRAP_TTL_S = 86400.0


@dataclass(frozen=True)
class DomainSeen:
    """A lookup that told a domain's expiry: what alerts compares with the previous answer."""

    domain: str
    server_ids: tuple[int, ...]
    at: datetime
    expires_at: datetime
    registrar: str
    previous_expires_at: datetime | None
    previous_checked_at: datetime | None


def monitored_domains() -> dict[str, list[int]]:
    """Registrable domain -> the enabled monitors' servers under it (HTTP, TCP and DNS; not heartbeats)."""
    rows = ServerMonitor.objects.filter(enabled=True, server__enabled=True).exclude(kind=Kind.HEARTBEAT.value)
    out: dict[str, list[int]] = defaultdict(list)
    for sid, host in rows.values_list("server_id", "server__host").order_by("server_id"):
        domain = registrable_domain(host)
        if domain:
            out[domain].append(sid)
    return dict(out)


def https_get(url: str) -> tuple[int | None, bytes, str]:
    """(status, body, why it failed) of one GET, guarded and bounded: the name looked up within
    CRAWL_DNS_TIMEOUT and every address it has checked by the guard, connect and headers within their
    deadlines, the body cut at MAX_ANSWER_BYTES and read within CRAWL_BODY_TIMEOUT, no redirect followed."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return None, b"", "not an https URL"
    try:
        # Every address, not only the allowed ones: requests looks the name up again and may dial any of them.
        addresses = resolve_allowed(parts.hostname, parts.port or 443, guard=None, deadline=settings.CRAWL_DNS_TIMEOUT)
    except Unresolved as exc:
        return None, b"", exc.detail
    guard = address_guard()
    if any(guard(ip) is not None for ip in addresses):
        return None, b"", REFUSED
    timeout = (settings.CRAWL_CONNECT_TIMEOUT, settings.CRAWL_HEADER_TIMEOUT)
    headers = {"User-Agent": settings.CRAWL_USER_AGENT, "Accept": "application/rdap+json, application/json"}
    try:
        options = {"timeout": timeout, "verify": ca_bundle(), "stream": True, "allow_redirects": False}
        with requests.get(url, headers=headers, **options) as r:
            deadline, body = time.monotonic() + settings.CRAWL_BODY_TIMEOUT, b""
            for chunk in r.iter_content(65536):
                body += chunk
                if len(body) > MAX_ANSWER_BYTES or time.monotonic() > deadline:
                    break
            return r.status_code, body[:MAX_ANSWER_BYTES], ""
    except requests.exceptions.SSLError:
        return None, b"", "TLS: the registry's certificate was refused"
    except requests.exceptions.Timeout:
        return None, b"", "timed out"
    except requests.exceptions.RequestException as exc:
        return None, b"", type(exc).__name__


_bootstrap: tuple[float, dict[str, str]] | None = None
_bootstrap_lock = threading.Lock()


def _bases() -> dict[str, str] | str:
    """One base URL for every domain (MONITOR_RDAP_BASE_URL), or IANA's TLD -> base table (kept a day)."""
    global _bootstrap
    if settings.MONITOR_RDAP_BASE_URL:
        return settings.MONITOR_RDAP_BASE_URL
    with _bootstrap_lock:
        if _bootstrap is None or time.monotonic() - _bootstrap[0] > BOOTSTRAP_TTL_S:
            status, body, _ = https_get(settings.MONITOR_RDAP_BOOTSTRAP_URL)
            try:
                table = bootstrap_bases(json.loads(body)) if status == 200 else {}
            except ValueError:
                table = {}
            if not table:
                return {}  # not kept: asked again next time
            _bootstrap = (time.monotonic(), table)
        return _bootstrap[1]


def domains_refresh(*, force: bool = False, now: datetime | None = None) -> list[DomainExpiry]:
    """Look up every monitored domain whose answer is older than MONITOR_RDAP_CACHE_HOURS (all with
    `force`), store the answers, tell alerts; returns every monitored domain's row, by name."""
    now = now or timezone.now()
    wanted = monitored_domains()
    known = {d.domain: d for d in DomainExpiry.objects.filter(domain__in=list(wanted))}
    fresh_after = now - timedelta(hours=settings.MONITOR_RDAP_CACHE_HOURS)
    due = [d for d in sorted(wanted) if force or d not in known or known[d].checked_at <= fresh_after]
    answers: list[RdapAnswer] = []
    if due:
        bases = _bases()
        for domain in due:
            if not bases:
                answers.append(RdapAnswer(domain, None, error="registry unknown: IANA's RDAP bootstrap unreachable"))
                continue
            base = bases if isinstance(bases, str) else base_for(domain, bases)
            answers.append(rdap_lookup(domain, base, https_get))
    seen = []
    with transaction.atomic():
        for a in answers:
            row = known.get(a.domain) or DomainExpiry(domain=a.domain)
            if a.expires_at is not None:
                seen.append(
                    DomainSeen(a.domain, tuple(wanted[a.domain]), now, a.expires_at, a.registrar,
                               row.expires_at if row.pk and not row.error else None,
                               row.checked_at if row.pk and not row.error else None)
                )  # fmt: skip
                row.expires_at, row.registrar = a.expires_at, a.registrar
            row.checked_at, row.error = now, a.error[:300]
            row.save()
            known[a.domain] = row
        hooks.domains_seen(seen)  # alerts' events and outbox rows, with the answers
    return [known[d] for d in sorted(wanted) if d in known]
