"""The durable state of a crawl. PostgreSQL (or SQLite embedded) is the single source of truth:
every unit of work is a row, claimed with a lease, so a lost message or a killed worker loses nothing.

One module a family of rows (servers, their health, URLs and pages, checks, jobs, beat runs); every model is
imported here, where Django looks for an app's models, and importers keep `from crawlcore.models import X`.
"""

from __future__ import annotations

from .beat import BeatJobRun
from .checks import Exchange, StatusCheck
from .freshness import FreshnessHour, FreshnessObjective, IndexNowSite, LastmodTally
from .health import ServerHealth, ServerHealthEvent
from .jobs import Job, JobRun, JobUrl
from .servers import Server, ServerLease, Sitemap
from .urls import Link, Page, Url, UrlEvent

__all__ = [
    "BeatJobRun",
    "Exchange",
    "FreshnessHour",
    "FreshnessObjective",
    "IndexNowSite",
    "Job",
    "JobRun",
    "JobUrl",
    "LastmodTally",
    "Link",
    "Page",
    "Server",
    "ServerHealth",
    "ServerHealthEvent",
    "ServerLease",
    "Sitemap",
    "StatusCheck",
    "Url",
    "UrlEvent",
]
