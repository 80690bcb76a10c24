"""Setting a job's queued URLs aside while it does not run, and taking them back. A job that is not running
holds no slot and fetches nothing: its queued URLs (Init, due, not leased) are set aside with the reason
(`job paused`, `job stopped`, `job outside its window`) unless another running job also reached them, and
taken back when it runs again. The hot paths (claim, dispatch) therefore need no knowledge of jobs: a
set-aside URL is simply never due.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Exists, OuterRef
from django.utils import timezone

from crawlcore.models import Job, JobUrl, Url
from crawler import jobrules
from crawler.lifecycle import State

# The reasons a job sets its queued URLs aside for while it does not run: taken back when it runs again.
HELD = (jobrules.JOB_PAUSED, jobrules.JOB_STOPPED, jobrules.OUTSIDE_WINDOW)


def job_url_ids(job_id: int):
    return JobUrl.objects.filter(job_id=job_id).values("url_id")


def job_hold(*, job_id: int, reason: str) -> int:
    """Set the job's queued URLs aside for `reason`, but those another running job reached too and those the
    crawl had due before the job reached them (JobUrl.joined: the default crawl's, which no job would take
    back). Returns how many. A URL a load batch holds (leased) is set aside as well: the batch sees it before
    its request and hands it back unfetched (crawlcore.services.load), so a pause stops the job's requests
    within seconds."""
    others = JobUrl.objects.filter(url_id=OuterRef("pk"), job__state=Job.RUNNING).exclude(job_id=job_id)
    own = JobUrl.objects.filter(job_id=job_id, joined=False).values("url_id")
    return (
        Url.objects.filter(id__in=own, state=State.INIT.value, exclusion_reason="")
        .exclude(Exists(others))
        .update(exclusion_reason=reason, next_check_at=None)
    )


def job_unhold(*, job_id: int, reasons: Sequence[str] = HELD) -> set[int]:
    """Make the job's set-aside URLs due again; the servers they are on."""
    qs = Url.objects.filter(id__in=job_url_ids(job_id), state=State.INIT.value, exclusion_reason__in=list(reasons))
    servers = set(qs.values_list("server_id", flat=True).distinct())
    qs.update(exclusion_reason="", next_check_at=timezone.now())
    return servers
