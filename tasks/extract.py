"""The URL-extract agent (queue `extract`)."""

from __future__ import annotations

from celery import shared_task

from crawladmin.services.extract import pages_extract


@shared_task(name="tasks.extract.extract_pages", acks_late=True)
def extract_pages(page_ids: list[int]) -> dict:
    outcome = pages_extract(page_ids=page_ids)
    return {"pages": outcome.pages, "links": outcome.links}
