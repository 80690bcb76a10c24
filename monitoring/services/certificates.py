"""Certificates seen by https checks: the latest per server, and what changed since the last."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from crawler.certs import Certificate
from crawler.http import FailureKind, FetchResult

from .. import hooks
from ..models import ServerCertificate


class CheckSeen(Protocol):
    """What this module reads of a check (monitoring.services.checks.Checked has it): the checks module
    calls this one, so this one names the shape it needs instead of importing it back."""

    checked_at: datetime

    @property
    def result(self) -> FetchResult: ...

    @property
    def server_id(self) -> int: ...


@dataclass(frozen=True)
class CertificateSeen:
    """One server's certificate at a check, with the expiry the previous check saw (None: first sight)."""

    server_id: int
    at: datetime
    certificate: Certificate
    previous_not_after: datetime | None
    tls_error: str  # the check's TLS failure ("" when the handshake was accepted)


def certificates_record(*, checked: Sequence[CheckSeen]) -> list[CertificateSeen]:
    """Keep each server's latest certificate and tell the hooks (alerts: expiry thresholds) in the caller's
    transaction. Several checks of one server in a batch: the latest wins."""
    latest: dict[int, CheckSeen] = {}
    for c in sorted(checked, key=lambda c: c.checked_at):
        latest[c.server_id] = c
    if not latest:
        return []
    before = dict(ServerCertificate.objects.filter(server_id__in=latest).values_list("server_id", "not_after"))
    seen, rows = [], []
    for sid, c in latest.items():
        cert = c.result.certificate
        assert cert is not None
        error = c.result.detail[:300] if c.result.failure is FailureKind.TLS else ""
        rows.append(
            ServerCertificate(
                server_id=sid,
                subject=cert.subject,
                issuer=cert.issuer,
                names=list(cert.names),
                not_before=cert.not_before,
                not_after=cert.not_after,
                checked_at=c.checked_at,
                error=error,
            )
        )
        seen.append(CertificateSeen(sid, c.checked_at, cert, before.get(sid), error))
    ServerCertificate.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["server"],
        update_fields=["subject", "issuer", "names", "not_before", "not_after", "checked_at", "error"],
    )
    hooks.certificates_seen(seen)
    return seen
