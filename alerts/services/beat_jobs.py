"""A beat job that outlasts its period: one alert while it does (kind beat, to_status late), one more when a
run fits in the period again (to_status normal). Called with each recorded run (crawlcore.services.beat_runs,
through the hook alerts registers in its AppConfig.ready())."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from crawlcore.models import BeatJobRun

from ..logic import Kind
from ..models import BeatJobAlert, Event
from .outbox import outbox_write

LATE, ON_TIME = "late", "normal"


def beat_job_alert(*, run: BeatJobRun) -> Event | None:
    """Raise the job's alert when its last run outlasted its period and it is not raised yet; resolve it when
    the run fitted and it is raised. The event and its outbox rows commit with the flip, or neither does."""
    late = run.last_seconds > run.period_seconds
    at = timezone.now()
    with transaction.atomic():
        # One guarded write decides: of two workers recording runs of the job at once, only the one that
        # flips the row tells anyone; a run that leaves the alert as it is flips nothing.
        flipped = BeatJobAlert.objects.filter(name=run.name, late=not late).update(late=late, since=at)
        if not flipped and late:
            try:
                with transaction.atomic():
                    BeatJobAlert.objects.create(name=run.name, late=True, since=at)
            except IntegrityError:  # the row is there: raised already (the update found it late)
                return None
        elif not flipped:
            return None  # on time, and no alert raised (or no row: the job was never late)
        event = Event.objects.create(
            kind=Kind.BEAT.value,
            server=None,
            subject=f"beat job {run.name!r}",
            at=at,
            from_status=ON_TIME if late else LATE,
            to_status=LATE if late else ON_TIME,
            reason=f"its last run took {run.last_seconds:.1f} s; it runs every {run.period_seconds} s"[:300],
        )
        outbox_write(events=[event], servers={})
    return event
