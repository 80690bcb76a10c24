"""The ranking job for beat (queue `housekeeping`): BlockRank over the crawl's link graph."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from ranking.services import RankAlreadyRunning, rank_crawl, run_summary

logger = logging.getLogger("tasks")


@shared_task(
    name="tasks.rank.rank_crawl",
    # A big graph takes minutes, not the agents' seconds: its own limits (RANK_TIME_LIMIT).
    soft_time_limit=settings.RANK_TIME_LIMIT,
    time_limit=settings.RANK_TIME_LIMIT + 60,
)
def rank_crawl_task(block: str | None = None) -> dict:
    try:
        return run_summary(rank_crawl(block=block))
    except RankAlreadyRunning:
        logger.info("ranking skipped: another run is in progress")
        return {"skipped": "another run is in progress"}
