from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig


def _changes_written(changes: Sequence[Any]) -> None:
    from .services.outbox import events_from_changes

    events_from_changes(changes=changes)


def _certificates_seen(seen: Sequence[Any]) -> None:
    from .services.outbox import events_from_certificates

    events_from_certificates(seen=seen)


def _domains_seen(seen: Sequence[Any]) -> None:
    from .services.outbox import events_from_domains

    events_from_domains(seen=seen)


def _beat_run_recorded(run: Any) -> None:
    from .services.beat_jobs import beat_job_alert

    beat_job_alert(run=run)


def _job_event(kind: str, job: Any, run: Any, facts: dict) -> None:
    from .services.job_events import job_event

    job_event(kind=kind, job=job, run=run, facts=facts)


def _round_finished() -> None:
    from .services.send import notifications_flush

    notifications_flush()


class AlertsConfig(AppConfig):
    name = "alerts"
    verbose_name = "Alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Monitoring sits below alerts and cannot import it: alerts hands monitoring the two functions
        # it calls (monitoring.hooks), so the outbox rows are written in the StatusChange's transaction.
        from crawlcore.services import beat_runs, job_events
        from monitoring import hooks

        from .destinations import apprise_logs_redact

        apprise_logs_redact()

        hooks.on_status_changes(_changes_written)
        hooks.on_certificates_seen(_certificates_seen)
        hooks.on_domains_seen(_domains_seen)
        hooks.on_round_finished(_round_finished)
        # The same for the crawl core's record of beat's jobs: a job that outlasts its period is told.
        beat_runs.on_run_recorded(_beat_run_recorded)
        # And of its crawl jobs: started, finished, stalled, budget reached (each once a run).
        job_events.on_job_event(_job_event)
