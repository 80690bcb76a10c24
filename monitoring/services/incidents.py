"""Incidents: opened by a confirmed outage in the transaction that writes it, told by operators' updates.

A confirmed change into disconnect or error opens an incident for the server (one open at a time), with a
first update in the monitor's words. The confirmed recovery closes it when no operator has written on it
(nothing was said, so nothing is left to say); otherwise it adds a "monitoring" update and leaves the
resolution to the operator. The monitor's words are fixed phrases, never a check's detail: a status page
shows them, and details can carry response text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from crawler.status import BAD, Status

from ..models import Incident, IncidentUpdate, StatusChange
from ..selectors import monitor_names

_BAD = {s.value for s in BAD}
OPENED = {
    Status.DISCONNECT.value: "The monitor confirmed it is down: not answering.",
    Status.ERROR.value: "The monitor confirmed it is down: answering with errors.",
}
RECOVERED = "The monitor sees it answering normally again."


class IncidentError(ValueError):
    pass


def incidents_from_changes(*, changes: Sequence[StatusChange]) -> list[Incident]:
    """Open and close incidents for confirmed changes just written (in their transaction)."""
    downs = [c for c in changes if c.to_status in _BAD and c.from_status not in _BAD]
    ups = [c for c in changes if c.from_status in _BAD and c.to_status not in _BAD]
    if not downs and not ups:
        return []
    ids = {c.server_id for c in downs + ups}
    open_ = {i.server_id: i for i in Incident.objects.filter(server_id__in=ids, resolved_at__isnull=True)}
    names = monitor_names(server_ids=ids)
    opened = []
    for c in sorted(downs + ups, key=lambda c: c.at):
        incident = open_.get(c.server_id)
        if c.to_status in _BAD:
            if incident is None:
                incident = Incident.objects.create(
                    server_id=c.server_id, title=f"{names.get(c.server_id, 'server')} down"[:200],
                    opened_at=c.at, status_change_id=c.id,
                )  # fmt: skip
                IncidentUpdate.objects.create(
                    incident=incident, status=Incident.INVESTIGATING, text=OPENED[c.to_status], at=c.at
                )
                open_[c.server_id] = incident
                opened.append(incident)
        elif incident is not None:
            spoken = IncidentUpdate.objects.filter(incident=incident).exclude(author="").exists()
            status = Incident.MONITORING if spoken else Incident.RESOLVED
            _update(incident, status=status, text=RECOVERED, at=c.at, author="")
            if status == Incident.RESOLVED:
                del open_[c.server_id]
    return opened


def _update(incident: Incident, *, status: str, text: str, at: datetime, author: str) -> IncidentUpdate:
    update = IncidentUpdate.objects.create(incident=incident, status=status, text=text, at=at, author=author)
    incident.status = status
    incident.resolved_at = at if status == Incident.RESOLVED else None
    incident.save(update_fields=["status", "resolved_at"])
    return update


def incident_update_add(
    *, incident_id: int, status: str, text: str, author: str, at: datetime | None = None
) -> IncidentUpdate:
    """An operator's update: the incident takes its status (resolved closes it; any other reopens it,
    refused when the server has another open incident)."""
    if status not in dict(Incident.STATUSES):
        raise IncidentError(f"status {status!r}: one of {', '.join(dict(Incident.STATUSES))}")
    text = (text or "").strip()
    if not text:
        raise IncidentError("an update needs text")
    with transaction.atomic():
        incident = Incident.objects.select_for_update().get(pk=incident_id)
        if status != Incident.RESOLVED and incident.resolved_at is not None:
            if Incident.objects.filter(server_id=incident.server_id, resolved_at__isnull=True).exists():
                raise IncidentError("the server has another open incident")
        return _update(incident, status=status, text=text[:5000], at=at or timezone.now(), author=author[:150])


def incident_status_sync(*, incident_id: int) -> None:
    """After updates were saved by other means (the admin's inline form): the incident takes the status of
    its latest update."""
    with transaction.atomic():
        incident = Incident.objects.select_for_update().get(pk=incident_id)
        latest = incident.updates.order_by("-at", "-id").first()
        if latest is None:
            return
        incident.status = latest.status
        incident.resolved_at = latest.at if latest.status == Incident.RESOLVED else None
        incident.save(update_fields=["status", "resolved_at"])


__all__ = ["IncidentError", "incident_status_sync", "incident_update_add", "incidents_from_changes"]
