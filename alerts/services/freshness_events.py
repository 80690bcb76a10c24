"""Freshness objectives' burn alerts: after each hour is recorded (crawlcore.services.freshness.
freshness_record), an objective whose hours burn its error budget too fast in the fast or the slow window
(scheduling.freshness.burning) raises `freshness.burn`, and `freshness.restored` when neither window burns any
more. Each flip is one guarded write on the objective, so two runs at once tell it once; the event and its
outbox rows commit with the flip."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from crawlcore.models import FreshnessHour, FreshnessObjective
from scheduling import freshness as fr

from ..logic import Kind
from ..models import Event
from .outbox import _servers, outbox_write


def _recent(obj: FreshnessObjective, *, now: datetime) -> list[bool]:
    """Its recorded hours of the slow window, newest first."""
    rows = FreshnessHour.objects.filter(objective=obj, hour__gt=now - timedelta(hours=fr.SLOW_HOURS), hour__lte=now)
    return list(rows.order_by("-hour").values_list("met", flat=True)[: fr.SLOW_HOURS])


def _reason(obj: FreshnessObjective, recent: list[bool]) -> str:
    fast, slow = fr.burn_rate(recent, fr.FAST_HOURS), fr.burn_rate(recent, fr.SLOW_HOURS)
    return (f"objective {obj.name!r} (p95 staleness within {obj.target} s on {obj.scope_name}): burn rate "
            f"{fast:.1f} over {fr.FAST_HOURS} h, {slow:.1f} over {fr.SLOW_HOURS} h")[:300]  # fmt: skip


def freshness_alerts(*, now: datetime | None = None) -> list[Event]:
    """Raise or restore each objective's burn alert as its recorded hours say; the events told."""
    now = now or timezone.now()
    told = []
    for obj in FreshnessObjective.objects.select_related("site", "job"):
        recent = _recent(obj, now=now)
        burn = fr.burning(recent)
        with transaction.atomic():
            if not FreshnessObjective.objects.filter(id=obj.id, burning=not burn).update(burning=burn):
                continue  # as it was (or another run flipped it first)
            event = Event.objects.create(
                kind=(Kind.FRESHNESS_BURN if burn else Kind.FRESHNESS_RESTORED).value,
                server_id=obj.site_id,
                subject=f"freshness objective {obj.name!r}"[:200],
                at=now,
                from_status="met" if burn else "burning",
                to_status="burning" if burn else "met",
                reason=_reason(obj, recent),
            )
            outbox_write(events=[event], servers=_servers({obj.site_id}) if obj.site_id else {})
        told.append(event)
    return told
