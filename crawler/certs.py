"""The server certificate of an https check, as libcurl reports it (CURLINFO_CERTINFO, OpenSSL's text).

Pure: no network, no Django. ``certificate_from_curl`` reads the leaf of the chain libcurl saw during the
handshake (also when verification failed, so an expired certificate still shows its dates).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class Certificate:
    subject: str
    issuer: str
    names: tuple[str, ...]  # subjectAltName DNS names and IP addresses
    not_before: datetime | None
    not_after: datetime | None

    def days_left(self, now: datetime) -> float | None:
        return None if self.not_after is None else (self.not_after - now).total_seconds() / 86400.0


def _when(text: str) -> datetime | None:
    """OpenSSL's 'Dec  1 17:53:55 2026 GMT'."""
    try:
        return datetime.strptime(" ".join(text.split()), "%b %d %H:%M:%S %Y GMT").replace(tzinfo=UTC)
    except ValueError:
        return None


def _names(text: str) -> tuple[str, ...]:
    out = []
    for part in text.split(","):
        kind, _, value = part.strip().partition(":")
        if kind in ("DNS", "IP Address") and value:
            out.append(value.strip())
    return tuple(out)


def certificate_from_curl(chain: Sequence[Sequence[tuple[str, str]]] | None) -> Certificate | None:
    """The leaf certificate of libcurl's certinfo (a list per certificate of (field, value) pairs)."""
    if not chain:
        return None
    fields = {k: v for k, v in chain[0]}
    return Certificate(
        subject=fields.get("Subject", "")[:300],
        issuer=fields.get("Issuer", "")[:300],
        names=_names(fields.get("X509v3 Subject Alternative Name", ""))[:100],
        not_before=_when(fields.get("Start date", "")),
        not_after=_when(fields.get("Expire date", "")),
    )
