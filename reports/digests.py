"""Owners' digests: each owner gets what broke and what was fixed on their sites since their last digest.

Delivery: the alerts app's e-mail channel is not in this tree yet, so a digest is written to a file under
the data directory (DATA_DIR/digests/); every digest sent is a Digest row (to whom, what, when, where).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from crawlcore.models import Server

from .models import Digest, LinkBreak
from .services import link_breaks_refresh

MAX_LISTED = 500  # links listed per section of one digest; the counts are always whole


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
    body = _text(name or email, servers, broke, n_broke, fixed, n_fixed, last, now)
    path = _write(owner_key, body, now)
    Digest.objects.create(
        owner_email=owner_key, owner_name=name, sites=[s.origin for s in servers], broken=n_broke, fixed=n_fixed,
        since=last, sent_at=now, channel="file", destination=str(path), body=body,
    )  # fmt: skip
    return True


def _lines(qs) -> list[str]:
    rows = qs.order_by("site_id", "from_url_id", "to_url_id").values_list(
        "from_url__url", "anchor_text", "to_url__url", "status", "failure_kind"
    )[:MAX_LISTED]
    return [
        f'  on {src}\n    "{text}" -> {dst} ({status or "-"} {kind})'.rstrip() for src, text, dst, status, kind in rows
    ]


def _text(who, servers, broke, n_broke, fixed, n_fixed, last, now) -> str:
    since = f"since {last:%Y-%m-%d %H:%M}" if last else "so far"
    parts = [
        f"To: {who}",
        f"Broken links of {', '.join(s.origin for s in servers)} {since} (as of {now:%Y-%m-%d %H:%M} UTC)",
        "",
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
