"""The URL-extract agent (queue `extract`)."""

from __future__ import annotations

from celery import shared_task

from crawlcore.services.extract import pages_extract

from .retry import DATABASE_LOST, retry_after_database_loss


@shared_task(name="tasks.extract.extract_pages", acks_late=True, bind=True)
def extract_pages(self, page_ids: list[int]) -> dict:
    try:
        outcome = pages_extract(page_ids=page_ids)
    except DATABASE_LOST as exc:
        # One transaction: nothing of the batch was stored, and the retry extracts it whole.
        raise retry_after_database_loss(self, exc) from exc
    return {"pages": outcome.pages, "links": outcome.links}
