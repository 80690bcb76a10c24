"""The events of a job's run (started, finished, stalled, budget reached) and the hooks they are handed to.
The crawl core decides each event; the alerts app, above it, registers the hook that turns them into
notifications, so the core never imports alerts.
"""

from __future__ import annotations

from collections.abc import Callable

from crawlcore.models import Job, JobRun

# The events of a job's run, each told once a run, in the transaction of the write that decides it. The
# alerts app (above the crawl core) registers the hook that writes them to the outbox (alerts.apps).
STARTED, FINISHED, STALLED, BUDGET_REACHED = "job.started", "job.finished", "job.stalled", "job.budget_reached"
EventHook = Callable[[str, Job, JobRun, dict], None]
_event_hooks: list[EventHook] = []


def on_job_event(hook: EventHook) -> None:
    if hook not in _event_hooks:
        _event_hooks.append(hook)


def job_event_tell(kind: str, *, job: Job, run: JobRun, facts: dict | None = None) -> None:
    """Hand an event of the run to the hooks, in the caller's transaction. A hook's failure rolls back the
    write that decided the event, so it is told with it or not at all."""
    for hook in _event_hooks:
        hook(kind, job, run, facts or {})
