"""Reads of incidents and their evidence: the one form the API, the dashboard's incident page and the
alerts all show (``incident_view``, ``evidence_view``, ``evidence_alert_lines``), so none re-derives it.

The evidence is for operators only: the public status page reads incidents through dashboard.status_page,
which never calls these.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Iterable
from datetime import datetime
from urllib.parse import quote

from django.conf import settings

from crawlcore.models import Exchange, Server

from .evidence import PHASES, body_text, excerpt, head_headers, slowest_phase
from .models import Evidence, Incident

EXCERPT_CHARS = 300  # of the body, in an alert


def replay_url(url: str, at: datetime | str | None) -> str | None:
    """The address of `url` as archived at `at` in the pywb collection ARCHIVE_REPLAY_URL names; None when
    none is configured. pywb serves the capture nearest the timestamp."""
    base = settings.ARCHIVE_REPLAY_URL
    if not base or at is None:
        return None
    if isinstance(at, str):
        at = datetime.fromisoformat(at)
    stamp = at.strftime("%Y%m%d%H%M%S")
    return f"{base.rstrip('/')}/{stamp}/{quote(url, safe=':/?&=%#;@+,~')}"


def _body(ev: Evidence) -> bytes:
    ex: Exchange | None = ev.exchange
    if ex is None or not ex.body_z:
        return b""
    return zlib.decompress(bytes(ex.body_z))


def evidence_view(ev: Evidence | None) -> dict | None:
    """The evidence as the API gives it (and the incident page shows it)."""
    if ev is None:
        return None
    ex: Exchange | None = ev.exchange
    body = _body(ev)
    text = body_text(body, ev.content_type)
    headers: dict[str, str] = {}
    for name, value in head_headers(ex.response_head if ex is not None else ""):
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    good = ev.last_good
    last_good = None
    if good:
        last_good = {
            "at": good["at"],
            "status_code": good["status_code"],
            "url": good["url"],
            "replay": replay_url(good["url"], good.get("capture_at")),
            "source": good.get("source", ""),
        }
    slow = slowest_phase(ev.timings)
    return {
        "url": ev.url,
        "at": ev.taken_at.isoformat(),
        "category": ev.category,
        "status_code": ev.status_code,
        "status_line": (ex.response_head.split("\r\n", 1)[0] if ex is not None else ""),
        "headers": headers,
        "content_type": ev.content_type,
        "body_excerpt": text if text is not None else "",
        "body_base64": base64.b64encode(body).decode() if text is None and body else None,
        "body_bytes_kept": len(body),
        "size": ev.size,
        "truncated": bool(ex is not None and ex.truncated),
        "failure_kind": ev.failure_kind,
        "detail": ev.detail,
        "timings_ms": {k: ev.timings.get(k) for k in (*PHASES, "total")},
        "slowest_phase": {"phase": slow[0], "ms": slow[1]} if slow else None,
        "peer_ip": ev.peer_ip,
        "certificate": ev.certificate,
        "locations": list(ev.locations),
        "last_good": last_good,
        "difference": ev.difference,
        "replay": replay_url(ev.url, ev.taken_at) if ex is not None else None,
    }


def incident_evidence(*, incident: Incident) -> dict | None:
    """An incident's evidence in its external form (evidence_view), null when none was kept: the field an
    incident's API form carries."""
    if not incident.status_change_id:
        return None
    return evidence_view(_evidence_by_change([incident.status_change_id]).get(incident.status_change_id))


def incidents_evidence(incidents: Iterable[Incident]) -> dict[int, dict | None]:
    """Each incident's evidence (incident id -> evidence_view), read in one query for a page of them."""
    incidents = list(incidents)
    found = _evidence_by_change([i.status_change_id for i in incidents])
    return {i.id: evidence_view(found.get(i.status_change_id)) for i in incidents}


def _evidence_by_change(change_ids: Iterable[int]) -> dict[int, Evidence]:
    rows = Evidence.objects.filter(status_change_id__in=[i for i in change_ids if i]).select_related("exchange")
    return {e.status_change_id: e for e in rows}


def incident_view(incident: Incident, *, evidence: Evidence | None = None, with_updates: bool = True) -> dict:
    """An incident with its evidence (null when the change kept none: an incident opened by hand)."""
    shown = evidence_view(evidence) if evidence is not None else incident_evidence(incident=incident)
    out = {
        "id": incident.id,
        "title": incident.title,
        "status": incident.status,
        "server_id": incident.server_id,
        "server": incident.server.origin,
        "group": incident.server.group,
        "opened_at": incident.opened_at.isoformat(),
        "resolved_at": incident.resolved_at.isoformat() if incident.resolved_at else None,
        "evidence": shown,
    }
    if with_updates:
        out["updates"] = [
            {"at": u.at.isoformat(), "status": u.status, "text": u.text, "author": u.author}
            for u in incident.updates.order_by("at", "id")
        ]
    return out


def incidents_visible(*, groups: frozenset[str] | None):
    """Incidents newest first, of the given server groups only (None: every group)."""
    qs = Incident.objects.select_related("server").order_by("-opened_at", "-id")
    return qs if groups is None else qs.filter(server__group__in=groups)


def incidents_views(incidents: Iterable[Incident]) -> list[dict]:
    incidents = list(incidents)
    found = _evidence_by_change(i.status_change_id for i in incidents)
    return [incident_view(i, evidence=found.get(i.status_change_id), with_updates=False) for i in incidents]


def evidence_alert_lines(*, status_change_ids: Iterable[int]) -> dict[int, str]:
    """What each change's server answered, on one line for an alert: the status, at most EXCERPT_CHARS of
    the body as text (controls dropped), the slowest phase. Changes of a group in ALERTS_NO_EXCERPT_GROUPS
    say the status and the phase without the body."""
    found = _evidence_by_change(status_change_ids)
    if not found:
        return {}
    quiet = set(settings.ALERTS_NO_EXCERPT_GROUPS)
    groups = dict(Server.objects.filter(id__in={e.server_id for e in found.values()}).values_list("id", "group"))
    out = {}
    for change_id, ev in found.items():
        parts = [f"answered {ev.status_code}" if ev.status_code is not None else "no answer"]
        if ev.status_code is None and ev.detail:
            parts[0] += f" ({excerpt(ev.detail, 120)})"
        if groups.get(ev.server_id, "") not in quiet:
            text = body_text(_body(ev), ev.content_type)
            if text and text.strip():
                parts.append(f'"{excerpt(text, EXCERPT_CHARS)}"')
            elif ev.size:
                parts.append(f"{ev.size} bytes of {ev.content_type or 'unknown type'}")
        slow = slowest_phase(ev.timings)
        if slow:
            parts.append(f"slowest phase {slow[0].replace('_', ' ')} {slow[1]:.0f} ms")
        out[change_id] = "; ".join(parts)
    return out


__all__ = [
    "evidence_alert_lines", "evidence_view", "incident_evidence", "incident_view", "incidents_evidence",
    "incidents_views", "incidents_visible", "replay_url",
]  # fmt: skip
