"""A job's rules as extraction applies them (JobRules), built from its Job row: scope, depth, path patterns,
state and windows. Its own module, below both the job services that apply it and the selectors that ask a
job's scope of a server, so that neither reaches into the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from crawlcore.models import Job
from crawler import jobrules
from crawler.jobrules import PathRules
from crawler.scope import registered_domain
from crawler.urlnorm import server_key
from crawler.windows import in_day_windows


@dataclass(frozen=True)
class JobRules:
    """One job's rules as extraction applies them, read once a batch."""

    id: int
    state: str
    scope: str
    roots: frozenset[str]
    max_depth: int
    max_pages: int | None
    paths: PathRules
    windows: tuple[str, ...]
    time_zone: str

    @classmethod
    def of(cls, job: Job) -> JobRules:
        hosts = {server_key(seed).host for seed in job.seeds}
        roots = frozenset(h if job.scope == "host" else registered_domain(h) for h in hosts)
        max_depth = settings.CRAWL_MAX_DEPTH if job.max_depth is None else job.max_depth
        return cls(job.id, job.state, job.scope, roots, max_depth, job.max_pages,
                   PathRules(tuple(job.include), tuple(job.exclude)), tuple(job.windows), job.time_zone)  # fmt: skip

    def in_scope(self, host: str) -> bool:
        if self.scope == "any":
            return True
        host = host.lower()
        return (host if self.scope == "host" else registered_domain(host)) in self.roots

    def reason(self, url: str, depth: int) -> str:
        """Why the job does not take this URL in ("" when it may), its patterns (`paths`, judged a page at a
        time: crawlcore.services.job_admission.path_verdicts), state and budget aside."""
        if not self.in_scope(server_key(url).host):
            return "out of scope"
        if depth > self.max_depth:
            return "too deep"
        return ""

    def held_reason(self, now: datetime) -> str:
        """Why the job's new URLs wait ("" when they are due now)."""
        if self.state == Job.PAUSED:
            return jobrules.JOB_PAUSED
        if self.state != Job.RUNNING:
            return jobrules.JOB_STOPPED
        if not in_day_windows(self.windows, now, self.time_zone):
            return jobrules.OUTSIDE_WINDOW
        return ""
