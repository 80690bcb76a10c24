"""The ranking job for beat (queue `housekeeping`): BlockRank over the crawl's link graph."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from .retry import skip_without_database

logger = logging.getLogger("tasks")


def _rank(block: str | None) -> dict:
    # Imported here, not with the module: the ranking's numpy and scipy (~30 MB) are loaded by the one worker
    # that ranks, not by every worker that merely registers the task (every celery worker imports them all).
    from ranking.services import RankAlreadyRunning, rank_crawl, run_summary

    try:
        return run_summary(rank_crawl(block=block))
    except RankAlreadyRunning:
        logger.info("ranking skipped: another run is in progress")
        return {"skipped": "another run is in progress"}


@shared_task(
    name="tasks.rank.rank_crawl",
    # A big graph takes minutes, not the agents' seconds: its own limits (RANK_TIME_LIMIT).
    soft_time_limit=settings.RANK_TIME_LIMIT,
    time_limit=settings.RANK_TIME_LIMIT + 60,
)
def rank_crawl_task(block: str | None = None) -> dict | None:
    # Nothing of a run is stored until its last transaction, and its lock goes with the lost session:
    # skipped, the next scheduled run ranks from scratch.
    return skip_without_database("ranking", _rank, block=block)
