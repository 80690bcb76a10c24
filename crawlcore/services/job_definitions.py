"""A job's definition as the admin, the API and the config file write it: saved (a running job whose rules
changed sets its queued URLs that no longer pass aside, with the reason) or deleted.
"""

from __future__ import annotations

from django.db.models import Exists, F, OuterRef

from crawlcore.jobrules_of import JobRules
from crawlcore.models import Job, JobRun, JobUrl, Url
from crawler import jobrules
from crawler.lifecycle import State

from .job_admission import path_verdicts
from .job_hold import HELD, job_hold


def job_save(*, spec: dict, dry_run: bool = False) -> tuple[str, Job | None]:
    """Create or update the job named spec["name"] from checked keys (crawler.jobrules.job_spec_check):
    ("created" | "changed" | "unchanged", the job). With `dry_run` nothing is written (the job: None when new).
    A running job whose patterns changed sets its queued URLs that no longer pass aside, with the reason."""
    if "render" in spec and spec["render"] is None:  # the definition's "no choice" (the setting's) is stored empty
        spec = {**spec, "render": ""}
    job = Job.objects.filter(name=spec["name"]).first()
    if job is None:
        if dry_run:
            return "created", None
        return "created", Job.objects.create(**spec)
    changed = {k: v for k, v in spec.items() if getattr(job, k) != v}
    if not changed:
        return "unchanged", job
    if dry_run:
        return "changed", job
    for key, value in changed.items():
        setattr(job, key, value)
    job.save()
    if {"include", "exclude", "max_depth", "scope"} & set(changed):
        job_rules_reapply(job=job)
    return "changed", job


def job_rules_reapply(*, job: Job, chunk: int = 1000) -> int:
    """Set aside the job's queued URLs that its rules (edited while it runs) no longer take in: the reason
    shows on the URL, and it is not fetched (one a load batch holds is handed back unfetched, as on a pause).
    URLs another running job reached too are left. How many; counted on the open run (JobRun.set_aside)."""
    rules = JobRules.of(job)
    others = JobUrl.objects.filter(url_id=OuterRef("url_id"), job__state=Job.RUNNING).exclude(job_id=job.id)
    queued = (
        # Those held while the job pauses (or waits for its window) too: else its resume would make them due.
        JobUrl.objects.filter(job_id=job.id, url__state=State.INIT.value, url__exclusion_reason__in=["", *HELD])
        .exclude(Exists(others))
        .order_by("url_id")
        .values_list("url_id", "url__url", "depth")
    )  # fmt: skip
    set_aside = 0
    last = 0
    while True:
        rows = list(queued.filter(url_id__gt=last)[:chunk])
        if not rows:
            if set_aside:
                JobRun.objects.filter(job_id=job.id, ended_at__isnull=True).update(set_aside=F("set_aside") + set_aside)
            return set_aside
        last = rows[-1][0]
        by_reason: dict[str, list[int]] = {}
        passed: dict[str, int] = {}
        for url_id, url, depth in rows:
            reason = rules.reason(url, depth)
            if reason:
                by_reason.setdefault(reason, []).append(url_id)
            elif rules.paths:
                passed[url] = url_id
        # The patterns over the chunk, as over a page's links: within one budget, in a bounded child.
        verdicts = path_verdicts({(0, job.id): dict.fromkeys(passed)}, {job.id: rules}) if passed else {}
        for (_, _, url), reason in verdicts.items():
            if reason:
                by_reason.setdefault(reason, []).append(passed[url])
        for reason, ids in by_reason.items():
            set_aside += Url.objects.filter(id__in=ids, exclusion_reason__in=["", *HELD]).update(
                exclusion_reason=reason, next_check_at=None
            )


def job_delete(*, name: str) -> bool:
    """Remove the job, its runs and its record of URLs reached (the URLs themselves stay: they are the
    crawl's). Its queued URLs that no other job holds are set aside first."""
    job = Job.objects.filter(name=name).first()
    if job is None:
        return False
    job_hold(job_id=job.id, reason=jobrules.JOB_STOPPED)
    JobUrl.objects.filter(job_id=job.id).delete()
    job.delete()  # its politeness goes with it: read while it runs (selectors_jobs.jobs_politeness), never written
    return True
