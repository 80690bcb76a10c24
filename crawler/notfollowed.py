"""Why a link was not followed: the fixed list of reasons a site owner sees.

A URL keeps the reason it was set aside in its own words (`exclusion_reason`, e.g. "private address:
10.0.0.0/8"); `category` maps those words onto this list, so counts per site add up the same way
everywhere (crawl --json, the crawl page).
"""

from __future__ import annotations

ROBOTS = "robots.txt"
OUT_OF_SCOPE = "out of scope"
TOO_DEEP = "too deep"
TOO_LONG = "URL too long"
NOFOLLOW = "nofollow"
PRIVATE = "private address"
DUPLICATE = "duplicate content"
SERVER_EXCLUDED = "server excluded"
TOO_MANY_LINKS = "too many links"  # found past the per-page bound of links followed (crawler.parse)
# A crawl job's (crawler.jobrules): a pattern of the job, its page limit, or the job not running now.
JOB_PATTERN = "job pattern"
JOB_PAGE_LIMIT = "job page limit"
JOB_PAUSED = "job paused"
JOB_STOPPED = "job stopped"
JOB_OUTSIDE_WINDOW = "job outside its window"
JOB_REASONS = (JOB_PATTERN, JOB_PAGE_LIMIT, JOB_PAUSED, JOB_STOPPED, JOB_OUTSIDE_WINDOW)

REASONS = (ROBOTS, OUT_OF_SCOPE, TOO_DEEP, TOO_LONG, NOFOLLOW, PRIVATE, DUPLICATE, SERVER_EXCLUDED, TOO_MANY_LINKS,
           *JOB_REASONS)  # fmt: skip

# Set aside only for how the URL was first found: found again through a link that is followed, the URL is
# crawled after all (the other reasons are about the URL itself or its server, however it is reached). A
# job's reasons are of that kind: another job, or the default crawl, may follow the same URL.
LIFTABLE = (TOO_DEEP, NOFOLLOW, TOO_MANY_LINKS, *JOB_REASONS)


def category(reason: str) -> str:
    """One of REASONS for a URL's or a server's exclusion reason ("" for none)."""
    if not reason:
        return ""
    for known in REASONS:
        if reason == known or reason.startswith(f"{known}:"):
            return known
    # Aliases of another server, servers an operator turned off, and anything not foreseen here.
    return SERVER_EXCLUDED
