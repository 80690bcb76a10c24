"""A job's page budget (max_pages): taken by a guarded compare-and-set on the job's count, so that two extract
workers never take more than the budget between them, and the run told once when it is used up.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from crawlcore.models import Job, JobRun

from .job_events import BUDGET_REACHED, job_event_tell
from .job_runs import job_run_open

BUDGET_TRIES = 8


def budget_take(*, job_id: int, want: int, max_pages: int) -> int:
    """Take up to `want` of the job's page budget: how many were granted. A guarded compare-and-set on the
    job's count, so two extract workers can never take more than the budget between them."""
    for _ in range(BUDGET_TRIES):
        admitted = Job.objects.filter(id=job_id).values_list("admitted", flat=True).first()
        if admitted is None:
            return 0
        n = min(want, max_pages - admitted)
        if n <= 0:
            return 0
        if Job.objects.filter(id=job_id, admitted=admitted).update(admitted=admitted + n):
            if admitted + n >= max_pages:
                _budget_reached(job_id, max_pages)
            return n
        # Nothing updated: another worker took some of the budget meanwhile; read it again.
    return 0


def _budget_reached(job_id: int, max_pages: int) -> None:
    """The take that used the budget up tells it, once a run."""
    run = job_run_open(job_id)
    if run is None:
        return
    with transaction.atomic():
        if JobRun.objects.filter(id=run.id, budget_reached_at__isnull=True).update(budget_reached_at=timezone.now()):
            job_event_tell(BUDGET_REACHED, job=Job.objects.get(id=job_id), run=run, facts={"max_pages": max_pages})
