"""Owners' digests: each owner gets what broke and what was fixed on their sites since their last digest.

Delivery: by e-mail through the alerts app's e-mail channel (Django's backend, EMAIL_* settings) to the owner's
address; when no e-mail is configured (EMAIL_HOST unset), the owner has no address, or the relay refuses, the
digest is written to a file under the data directory (DATA_DIR/digests/). Every digest sent is a Digest row
(to whom, what, when, how and where).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from alerts.delivery import deliver
from alerts.destinations import Destination
from alerts.logic import Message
from crawlcore.models import Server

from .models import Digest, LinkBreak
from .selectors import with_impact
from .services import link_breaks_refresh

log = logging.getLogger(__name__)

MAX_LISTED = 500  # links listed per section of one digest; the counts are always whole
FIX_FIRST = 10  # the open broken links a digest leads with: those of most impact (reports.selectors.with_impact)


@dataclass
class DigestOutcome:
    sent: int = 0
    skipped: int = 0  # owners with nothing new since their last digest


def _owner_key(email: str, name: str) -> str:
    return email.lower() or name


def digests_send(*, now: datetime | None = None) -> DigestOutcome:
    """Refresh the record of broken links, then send each owner (servers with an owner e-mail or name) the
    links of their sites that broke and that were fixed since their previous digest (all open ones for a
    first digest). An owner with nothing to tell gets nothing."""
    now = now or timezone.now()
    link_breaks_refresh(now=now)
    owners: dict[str, list[Server]] = {}
    for server in Server.objects.filter(~Q(owner_email="") | ~Q(owner_name="")).order_by("host", "port"):
        owners.setdefault(_owner_key(server.owner_email, server.owner_name), []).append(server)
    outcome = DigestOutcome()
    for key, servers in owners.items():
        if digest_send(owner_key=key, servers=servers, now=now):
            outcome.sent += 1
        else:
            outcome.skipped += 1
    return outcome


def digest_send(*, owner_key: str, servers: list[Server], now: datetime) -> bool:
    email, name = servers[0].owner_email, servers[0].owner_name
    last = Digest.objects.filter(owner_email=owner_key).order_by("-sent_at").values_list("sent_at", flat=True).first()
    ids = [s.id for s in servers]
    broke = LinkBreak.objects.filter(site_id__in=ids, fixed_at__isnull=True)
    fixed = LinkBreak.objects.filter(site_id__in=ids, fixed_at__isnull=False, fixed_at__lte=now)
    if last is not None:
        broke, fixed = broke.filter(first_broken_at__gt=last), fixed.filter(fixed_at__gt=last)
    n_broke, n_fixed = broke.count(), fixed.count()
    if not n_broke and not n_fixed:
        return False
    first = with_impact(LinkBreak.objects.filter(site_id__in=ids, fixed_at__isnull=True))
    body = _text(name or email, servers, broke, n_broke, fixed, n_fixed, last, now, first=_first_lines(first))
    channel, destination = _deliver(owner_key, email, body, n_broke, n_fixed, now)
    Digest.objects.create(
        owner_email=owner_key, owner_name=name, sites=[s.origin for s in servers], broken=n_broke, fixed=n_fixed,
        since=last, sent_at=now, channel=channel, destination=destination, body=body,
    )  # fmt: skip
    return True


def _deliver(owner_key: str, email: str, body: str, n_broke: int, n_fixed: int, now: datetime) -> tuple[str, str]:
    """E-mail when it can (the alerts app's channel), else a file: (channel, where)."""
    if email and settings.EMAIL_HOST:
        title = f"Broken links: {n_broke} broke, {n_fixed} fixed"
        # One key per owner and digest time: a resent copy folds into the first (same Message-ID).
        key = f"digest-{re.sub(r'[^A-Za-z0-9]+', '-', owner_key)}-{now:%Y%m%dT%H%M%S}"
        outcome = deliver(Destination("email", f"email:{email}", (email,)), Message(title, body, (), key))
        if outcome.ok:
            return "email", email
        log.warning("digest to %s not sent (%s): written to a file instead", email, outcome.error)
    return "file", str(_write(owner_key, body, now))


def _lines(qs) -> list[str]:
    rows = qs.order_by("site_id", "from_url_id", "to_url_id").values_list(
        "from_url__url", "anchor_text", "to_url__url", "status", "failure_kind"
    )[:MAX_LISTED]
    return [
        f'  on {src}\n    "{text}" -> {dst} ({status or "-"} {kind})'.rstrip() for src, text, dst, status, kind in rows
    ]


def _first_lines(qs) -> list[str]:
    """The open broken links of most impact, each with its impact (summed rank of the pages carrying it)."""
    rows = qs.values_list("from_url__url", "anchor_text", "to_url__url", "status", "failure_kind", "impact")
    return [
        f'  on {src}\n    "{text}" -> {dst} ({status or "-"} {kind}) impact {impact or 0:.3g}'
        for src, text, dst, status, kind, impact in rows[:FIX_FIRST]
    ]


def _text(who, servers, broke, n_broke, fixed, n_fixed, last, now, *, first: list[str] = ()) -> str:
    since = f"since {last:%Y-%m-%d %H:%M}" if last else "so far"
    lead = ["Fix these first (on the pages most reached, by summed page rank):", *first, ""] if first else []
    parts = [
        f"To: {who}",
        f"Broken links of {', '.join(s.origin for s in servers)} {since} (as of {now:%Y-%m-%d %H:%M} UTC)",
        "",
        *lead,
        f"Broke ({n_broke}):",
        *_lines(broke),
        "",
        f"Fixed ({n_fixed}):",
        *_lines(fixed),
    ]
    if max(n_broke, n_fixed) > MAX_LISTED:
        parts += ["", f"(the first {MAX_LISTED} of each; `manage.py dead_links --site HOST` exports them all)"]
    return "\n".join(parts) + "\n"


def _write(owner_key: str, body: str, now: datetime) -> Path:
    folder = Path(settings.DATA_DIR) / "digests"
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9@._-]+", "_", owner_key)[:100] or "owner"
    path = folder / f"{now:%Y%m%dT%H%M%S}-{safe}.txt"
    path.write_text(body, encoding="utf-8")
    return path
