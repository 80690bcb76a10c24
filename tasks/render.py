"""The render agent (queue `render`): headless Chromium for the pages that need it."""

from __future__ import annotations

from celery import shared_task

from crawlcore.services.leases import worker_identity
from crawlcore.services.render import page_render, page_render_give_up

from .retry import DATABASE_LOST, retry_after_database_loss

# A busy server (all its slots taken by other agents) or a failed render is tried again after this many
# seconds, this many times at most; then the page keeps what its raw body gave.
RETRY_SECONDS = 2.0
MAX_RETRIES = 150


@shared_task(name="tasks.render.render_page", acks_late=True, bind=True, max_retries=MAX_RETRIES)
def render_page(self, page_id: int) -> dict:
    owner = worker_identity()
    try:
        outcome = page_render(page_id=page_id, owner=owner)
    except DATABASE_LOST as exc:
        raise retry_after_database_loss(self, exc, owner=owner) from exc
    if outcome.retry:
        if self.request.retries >= MAX_RETRIES:
            page_render_give_up(page_id=page_id, reason=f"not rendered in time: {outcome.reason}")
            return {"rendered": False, "reason": outcome.reason}
        raise self.retry(countdown=RETRY_SECONDS)
    return {"rendered": outcome.done and not outcome.reason, "reason": outcome.reason}
