"""Evidence of confirmed outages: what the server answered, kept with the change that it confirmed.

``evidence_record`` runs in the transaction that writes the StatusChange rows (monitoring.services.checks),
so a change into disconnect, error or delay and its evidence commit together. The confirming check's
answer becomes an archive exchange (crawlcore's Exchange, kind monitor: its heads with secrets masked,
the first EVIDENCE_BODY_BYTES of its body), which an export writes as a response record with its request
like any other answer; the Evidence row adds the timings, the address, the certificate, each location's
verdict, the last good answer of the URL and one line saying what differs.

Bounded: the body kept is cut so that heads and body stay within EVIDENCE_MAX_BYTES per change; rows older
than EVIDENCE_RETENTION_DAYS are removed with their exchanges (``evidence_prune``, from the monitor's
history pruning).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from crawlcore.models import Exchange, Page, StatusCheck, Url
from crawlcore.services.exchanges import archivable, truncated_word
from crawler.http import FetchResult
from crawler.lifecycle import Agent
from crawler.urlnorm import canonicalize, url_hash

from ..evidence import Answer, difference, head_headers, head_mask, head_status
from ..models import Evidence, LocationState, ServerMonitor, StatusChange

INTO = frozenset({"disconnect", "error", "delay"})  # the changes that keep what was answered
_RESERVE = 4096  # bytes of the per-change budget kept for the timings, verdicts and last good


def _timings(result: FetchResult) -> dict[str, float | None]:
    t = result.timings
    tls = t.tls_ms
    connect = t.connect_ms - tls if t.connect_ms is not None and tls is not None else t.connect_ms

    def r(v: float | None) -> float | None:
        return None if v is None else round(max(0.0, v), 3)

    return {"dns": r(t.dns_ms), "connect": r(connect), "tls": r(tls), "first_byte": r(t.first_byte_ms),
            "body": r(t.body_ms), "total": r(t.total_ms)}  # fmt: skip


def _certificate(result: FetchResult) -> dict | None:
    c = result.certificate
    if c is None:
        return None
    return {"subject": c.subject, "issuer": c.issuer, "names": list(c.names)[:50],
            "not_before": c.not_before.isoformat() if c.not_before else None,
            "not_after": c.not_after.isoformat() if c.not_after else None}  # fmt: skip


def _exchange(result: FetchResult, *, server_id: int, at: datetime) -> Exchange | None:
    """The failing answer as an archive exchange: heads masked, the body's first bytes within the budget."""
    if not archivable(result):
        return None
    request_head, response_head = head_mask(result.request_head), head_mask(result.response_head)
    room = settings.EVIDENCE_MAX_BYTES - len(request_head) - len(response_head) - _RESERVE
    body = result.body[: max(0, min(settings.EVIDENCE_BODY_BYTES, room))]
    cut = len(body) < result.bytes_received
    return Exchange(
        server_id=server_id,
        requested_url=result.url,
        kind=Exchange.MONITOR,
        method=result.method[:8],
        fetched_at=at,
        status=result.status,
        request_head=request_head,
        response_head=response_head,
        peer_ip=result.peer_ip,
        body_z=zlib.compress(body, 6) if body else b"",
        size=len(body),
        checksum=hashlib.sha1(body).hexdigest() if body else "",
        truncated="length" if cut else truncated_word(result),
    )


def _locations(server_id: int, monitor: ServerMonitor | None, here: dict) -> list[dict]:
    """Each location's verdict: for a multi-location monitor every listed location's last check (its
    category and status); otherwise the one check that confirmed the change."""
    if monitor is None or not monitor.locations:
        return [here]
    out = []
    for state in LocationState.objects.filter(server_id=server_id).order_by("crawler_num"):
        last = (
            StatusCheck.objects.filter(
                server_id=server_id, agent=Agent.MONITOR.value, crawler_num=state.crawler_num,
                checked_at__gte=(state.last_check_at or timezone.now()) - timedelta(seconds=1),
            )
            .order_by("-checked_at")
            .values_list("status_code", flat=True)
            .first()
        )  # fmt: skip
        out.append({"location": str(state.crawler_num), "verdict": state.last_category or state.status,
                    "status_code": last})  # fmt: skip
    return out


def _page_answer(url: str) -> tuple[Page, Answer] | None:
    """The crawl's stored copy of `url`, if any (a Page: a whole 2xx answer)."""
    try:
        canonical = canonicalize(url)
    except Exception:  # noqa: BLE001 - a health URL the crawl's rules refuse: the crawl holds no copy of it
        return None
    row = Url.objects.filter(url_hash=url_hash(canonical), url=canonical).only("id").first()
    page = Page.objects.filter(url_id=row.id).first() if row is not None else None
    if page is None:
        return None
    head = dict((k.lower(), v) for k, v in head_headers(page.response_head))
    answer = Answer(head_status(page.response_head) or 200, page.size, page.checksum, page.content_type,
                    head.get("server", ""))  # fmt: skip
    return page, answer


def _last_good(server_id: int, url: str, before: datetime) -> tuple[dict | None, Answer | None]:
    """The newest good answer of `url` before `before`: the monitor's last normal check or the crawl's stored
    page, whichever is newer. The page, when there is one, is also what replays (the check keeps no body)."""
    check = (
        StatusCheck.objects.filter(server_id=server_id, agent=Agent.MONITOR.value, category="normal",
                                   requested_url=url, checked_at__lt=before)
        .order_by("-checked_at")
        .values("checked_at", "status_code", "bytes")
        .first()
    )  # fmt: skip
    found = _page_answer(url)
    page_at = found[0].fetched_at if found is not None and found[0].fetched_at < before else None
    if check is None and page_at is None:
        return None, None
    capture = page_at.isoformat() if page_at is not None else None
    if page_at is not None and (check is None or page_at >= check["checked_at"]):
        page, answer = found  # type: ignore[misc]
        good = {"at": page_at.isoformat(), "status_code": answer.status, "url": url, "source": "crawl",
                "size": answer.size, "checksum": answer.checksum, "capture_at": capture}  # fmt: skip
        return good, answer
    answer = Answer(check["status_code"], check["bytes"])
    if found is not None:  # the same URL's stored copy: its checksum, type and server, if the size agrees
        _, stored = found
        if stored.size == check["bytes"]:
            answer = Answer(check["status_code"], stored.size, stored.checksum, stored.content_type, stored.server)
    good = {"at": check["checked_at"].isoformat(), "status_code": check["status_code"], "url": url,
            "source": "monitor", "size": check["bytes"], "checksum": answer.checksum,
            "capture_at": capture}  # fmt: skip
    return good, answer


def evidence_record(*, changes: Sequence[StatusChange], checked: Sequence[Any]) -> list[Evidence]:
    """Keep the evidence of every change into disconnect, error or delay among `changes` (just created, ids
    set), from the check that confirmed it (one of `checked`, monitoring.services.checks.Checked)."""
    by_check = {c.check_id: c for c in checked if c.check_id is not None}
    into = [c for c in changes if c.to_status in INTO and c.status_check_id in by_check]
    if not into:
        return []
    monitors = ServerMonitor.objects.in_bulk({c.server_id for c in into})
    rows = []
    for change in into:
        c = by_check[change.status_check_id]
        result: FetchResult = c.result
        exchange = _exchange(result, server_id=change.server_id, at=c.checked_at)
        if exchange is not None:
            exchange.save()
        head = {k.lower(): v for k, v in head_headers(exchange.response_head)} if exchange is not None else {}
        content_type = head.get("content-type", "")[:200]
        # The location is the crawler number that checked (seed 002's locations); none when it has no number.
        here = {"location": str(settings.CRAWLER_NUM) if settings.CRAWLER_NUM is not None else None,
                "verdict": c.category, "status_code": result.status}  # fmt: skip
        good, good_answer = _last_good(change.server_id, result.url, c.checked_at)
        bad = Answer(result.status, result.bytes_received if result.status is not None else None,
                     exchange.checksum if exchange is not None and exchange.truncated == "" else "",
                     content_type, head.get("server", ""))  # fmt: skip
        rows.append(
            Evidence(
                status_change_id=change.id,
                server_id=change.server_id,
                taken_at=c.checked_at,
                url=result.url,
                status_code=result.status,
                category=c.category,
                failure_kind=(c.failure or (result.failure.value if result.failure else ""))[:32],
                detail=(c.detail or result.detail)[:300],
                content_type=content_type,
                size=result.bytes_received,
                checksum=exchange.checksum if exchange is not None else "",
                timings=_timings(result),
                peer_ip=result.peer_ip,
                certificate=_certificate(result),
                locations=_locations(change.server_id, monitors.get(change.server_id), here),
                exchange=exchange,
                last_good=good,
                difference=difference(good_answer, bad)[:500],
            )
        )
    return Evidence.objects.bulk_create(rows)


def evidence_prune(*, now: datetime | None = None) -> int:
    """Remove evidence older than EVIDENCE_RETENTION_DAYS (0 keeps it) with its archive exchanges."""
    days = settings.EVIDENCE_RETENTION_DAYS
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    removed = 0
    for _ in range(100_000):  # bounded: each round removes up to 1,000 rows or ends
        rows = list(Evidence.objects.filter(taken_at__lt=cutoff).order_by("id").values_list("id", "exchange_id")[:1000])
        if not rows:
            break
        Exchange.objects.filter(id__in=[x for _, x in rows if x is not None], kind=Exchange.MONITOR).delete()
        removed += Evidence.objects.filter(id__in=[pk for pk, _ in rows]).delete()[0]
    return removed


__all__ = ["INTO", "evidence_prune", "evidence_record"]
