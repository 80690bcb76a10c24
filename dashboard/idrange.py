"""Cheap reads over append-mostly tables whose ids grow with a timestamp (StatusCheck.checked_at)."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Model


def first_id_since(
    model: type[Model], field: str, since: datetime, *, window: int = 32, floor: datetime | None = None
) -> int | None:
    """The smallest id whose `field` is at or after `since`, for append-mostly tables whose ids grow with
    `field` (StatusCheck.checked_at). Gallops back from the newest row, then bisects: a few dozen short
    index range reads of the primary key, however big the table. Rows are not written in perfect order
    (a check is stamped when it started, written when it ended), so each probe looks at the newest of
    the `window` rows at or before it, and one late row cannot hide the recent ones. Approximate at the
    edge, which is good enough for a rate. None: no recent row.

    `floor` (at or before `since`): rows older than it are left out of every probe. On a table partitioned
    by `field`, the start of the partition that holds `since` (crawlcore.selectors.check_time_floor): each
    probe then plans and reads only that partition and the newer ones, not every partition of the table."""
    qs = model.objects.order_by("-pk")
    if floor is not None:
        qs = qs.filter(**{f"{field}__gte": floor})

    def newest_at_or_before(pk: int | None):
        rows = qs if pk is None else qs.filter(pk__lte=pk)
        stamps = [s for s in rows.values_list(field, flat=True)[:window] if s is not None]
        return max(stamps) if stamps else None

    top = qs.values_list("pk", flat=True).first()
    if top is None or (newest_at_or_before(None) or since) < since:
        return None
    hi, step, lo = top, 1, None  # hi: an id with recent rows at or before it
    for _ in range(64):
        probe = hi - step
        stamp = newest_at_or_before(probe) if probe > 0 else None
        if stamp is None or stamp < since:
            lo = max(probe, 0)
            break
        hi, step = probe, step * 2
    if lo is None:
        return hi
    while hi - lo > 1:  # invariant: nothing recent at or before lo; something recent at or before hi
        mid = (lo + hi) // 2
        stamp = newest_at_or_before(mid)
        if stamp is None or stamp < since:
            lo = mid
        else:
            hi = mid
    return max(hi - window + 1, lo + 1)  # the recent row may be any of the window's rows
