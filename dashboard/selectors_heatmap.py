"""Reads for the load heatmap (server x hour of day), from the stored 24-hour load profiles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from crawlcore.models import Server
from monitoring.kinds import Kind, shown_name

from .formats import heat_scale
from .ordering import natural_key


@dataclass
class HeatRow:
    server_id: int
    origin: str
    cells: list[tuple[float | None, float | None]]  # (mean ms, 0..1 on the heat scale)
    reason: str = ""  # why a row has no cells


def heat_row(server_id: int, origin: str, profile: Sequence[float | None], reason: str = "") -> HeatRow:
    lo, hi = heat_scale()
    span = math.log(hi / lo)

    def fraction(v: float) -> float:
        return min(1.0, max(0.0, math.log(max(v, lo) / lo) / span))

    cells = [(v, None if v is None else fraction(v)) for v in profile]
    return HeatRow(server_id, origin, cells, reason)


NO_PROFILE = "no load history yet: profiles are built hourly from the monitor's answered checks"
NEVER_ANSWERED = "no answered check in the profile's days: a server that never answers has no load"


def load_heatmap(*, group: str = "", groups: frozenset[str] | None = None, limit: int = 200) -> list[HeatRow]:
    """Every monitored server with a response time (of the group; heartbeats have none), named as
    everywhere, in natural order: first those with a profile (their cells), then the others with the
    reason they have none (the page folds those into one line)."""
    qs = Server.objects.filter(monitor__isnull=False, alias_of__isnull=True).exclude(monitor__kind=Kind.HEARTBEAT.value)
    if group:
        qs = qs.filter(group=group)
    if groups is not None:
        qs = qs.filter(group__in=groups)
    rows = qs.values_list("id", "load_profile", "scheme", "host", "port", "monitor__name")
    out = []
    for sid, profile, scheme, host, port, name in rows:
        origin = Server(scheme=scheme, host=host, port=port).origin
        label = shown_name(name=name or "", scheme=scheme, host=host, port=port, origin=origin)
        if len(profile or []) != 24:
            out.append(HeatRow(sid, label, [], NO_PROFILE))
        elif all(v is None for v in profile):
            out.append(HeatRow(sid, label, [], NEVER_ANSWERED))
        else:
            out.append(heat_row(sid, label, profile))
    out.sort(key=lambda r: (not r.cells, r.reason, natural_key(r.origin)))
    return out[:limit]
