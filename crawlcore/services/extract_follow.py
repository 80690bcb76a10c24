"""Which of a batch's links are followed, and what each target becomes: the global rules (nofollow, URL
length, depth), the crawl jobs' rules for their pages' links, and the one candidate a target keeps when the
batch links to it more than once. The merge runs in one loop over the links on purpose: it is the crawl's
hottest loop, and a call a link would cost every batch more than it reads better."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from django.conf import settings

from crawler import notfollowed
from crawler.parse import Extracted, Found

from .extract_read import StoredPage
from .job_admission import Admission, jobs_admit
from .urls import Known, NewUrl, new_url_from, urls_known

Parsed = list[tuple[StoredPage, Extracted | None]]


@dataclass(frozen=True)
class FollowRules:
    """The settings that decide whether a link is followed, read once a batch: a Django setting costs an
    attribute lookup through LazySettings each time, ~10 % of extraction when read for every link."""

    obey_nofollow: bool
    max_url_length: int
    max_depth: int
    offsite_depth: int
    check_resources: bool

    @classmethod
    def from_settings(cls) -> FollowRules:
        return cls(
            settings.CRAWL_OBEY_NOFOLLOW,
            settings.CRAWL_MAX_URL_LENGTH,
            settings.CRAWL_MAX_DEPTH,
            settings.CRAWL_OFFSITE_DEPTH,
            settings.CRAWL_CHECK_RESOURCES,
        )


def not_followed_reason(ex: Extracted, link: Found, depth: int, rules: FollowRules | None = None) -> str:
    """Why this link of the page is not to be followed ("" when it is). Resources are checked whatever
    their depth: they are leaves, never parsed."""
    rules = rules or FollowRules.from_settings()
    if ex.nofollow or (link.nofollow and rules.obey_nofollow):
        return notfollowed.NOFOLLOW
    if len(link.url) > rules.max_url_length:
        return notfollowed.TOO_LONG
    if depth > rules.max_depth and not link.resource:
        return notfollowed.TOO_DEEP
    return ""


def links_of(ex: Extracted) -> list[tuple[Found, bool]]:
    """The page's links, each with whether it is past the page's bound of links followed (recorded, set aside)."""
    return [(link, False) for link in ex.links] + [(link, True) for link in ex.over_limit]


def jobs_admission(parsed: Parsed, rules: FollowRules) -> Admission:
    """The pages of crawl jobs lead only where their jobs' rules allow (crawlcore.services.job_admission); the others
    follow the global settings. Nothing more to read when no page of the batch is a job's."""
    return jobs_admit(
        links=[
            (page.url_id, link.url, 1)
            for page, ex in parsed
            if ex is not None and page.of_job
            for link in ex.links
            if rules.check_resources or not link.resource
        ]
    )


def targets_known(parsed: Parsed, rules: FollowRules) -> Known:
    """Every target looked up first: most are known, and a known URL needs no candidate (its scope, its
    server, its reason: a third of the batch's own work) unless a followed link may lift it."""
    return urls_known(
        link.url
        for _page, ex in parsed
        if ex is not None
        for link, _over in links_of(ex)
        if rules.check_resources or not link.resource
    )


def link_targets(
    parsed: Parsed, rules: FollowRules, admission: Admission, settled: set[str]
) -> tuple[dict[str, NewUrl], dict[str, int]]:
    """The batch's targets not settled yet, each as the one candidate URL its occurrences make (followed or
    set aside with its not-followed reason), and the smallest depth each followed one is followed at."""
    new: dict[str, NewUrl] = {}
    followed: dict[str, int] = {}  # url -> the smallest depth it is followed at, from this batch
    for page, ex in parsed:
        if ex is None:
            continue
        depth = page.depth + 1
        of_jobs = admission.applies(page.url_id)
        for link, over in links_of(ex):
            if (link.resource and not rules.check_resources) or link.url in settled:
                continue
            reason = notfollowed.TOO_MANY_LINKS if over else not_followed_reason(ex, link, depth, rules)
            candidate = new_url_from(
                page, link.url, depth=depth, resource=link.resource, offsite_depth=rules.offsite_depth
            )
            if of_jobs:
                # The jobs' depth and scope stand in for the global ones; nofollow and length still hold.
                if reason == notfollowed.TOO_DEEP:
                    reason = ""
                candidate = admission.candidate(dataclasses.replace(candidate, exclusion_reason=reason))
                reason = ""
            if reason and not candidate.exclusion_reason:
                candidate = NewUrl(
                    link.url, depth, scope=candidate.scope, exclusion_reason=reason, resource=link.resource
                )
            if not candidate.exclusion_reason:
                followed[link.url] = min(depth, followed.get(link.url, depth))
            known = new.get(link.url)
            # A followed occurrence wins over an excluded one, then the shallowest, then a page over a resource.
            if known is None or (known.exclusion_reason, known.depth, known.resource) > (
                candidate.exclusion_reason,
                depth,
                candidate.resource,
            ):
                new[link.url] = candidate
    return new, followed
