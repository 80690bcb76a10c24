"""HTTP checks through the engine: one MultiChecker per thread (libcurl multi; not thread-safe) runs a
batch's requests at once, MONITOR_THREADS in flight, and each answer gets the monitor's verdict (accepted
codes and delay threshold, TLS, content rule, assertions). Apart from the round's other kinds and retries
because this is the one place that speaks to the engine and reads an answer's body.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from django.conf import settings
from django.utils import timezone

from crawlcore.services.render import answer_render
from crawler.http import FailureKind, FetchPolicy, FetchResult, Timings
from crawler.multicheck import CheckRequest, MultiChecker
from crawler.status import Category

from ..accepted_codes import classify
from ..assertions import assertion_failure
from ..content import content_failure
from .check_targets import Checked, Target
from .trust import REFUSED, address_guard

log = logging.getLogger(__name__)

_local = threading.local()


def check_policy() -> FetchPolicy:
    return FetchPolicy(
        connect_timeout=settings.CRAWL_CONNECT_TIMEOUT,
        header_timeout=settings.CRAWL_HEADER_TIMEOUT,
        body_timeout=settings.CRAWL_BODY_TIMEOUT,
        max_body_bytes=settings.CRAWL_MAX_BODY_BYTES,
        user_agent=settings.CRAWL_USER_AGENT,
        dns_timeout=settings.CRAWL_DNS_TIMEOUT,
    )


def _checker() -> MultiChecker:
    policy = check_policy()
    checker: MultiChecker | None = getattr(_local, "checker", None)
    if checker is not None and checker.policy != policy:  # the settings changed (tests override them)
        checker.close()
        checker = None
    if checker is None:
        _local.checker = checker = MultiChecker(policy)
    checker.max_parallel = settings.MONITOR_THREADS
    return checker


def check_guard(trusted: bool):
    """A trusted target (a trusted server's own host: trust.url_trusted) may be on any address; every other
    one gets the private-address guard."""
    return None if trusted else address_guard()


def _unchecked(target: Target) -> FetchResult:
    """The result standing in for the fetch a target's unusable settings prevented."""
    return FetchResult(
        url=target.url,
        method="GET",
        status=None,
        headers={},
        body=b"",
        failure=FailureKind.OTHER,
        detail=f"not checked: unusable monitor settings ({target.problem})",
        truncated=False,
        bytes_received=0,
        timings=Timings(None, None, None, None, 0.0),
        peer_ip=None,
    )


def _content_failure(target: Target, result) -> str | None:
    """Why the answer fails the monitor's content rule: in its body as served, or in the page a browser
    renders of it (the render agent's browsers, the same guard on each of the page's requests)."""
    if not target.content.rendered:
        return content_failure(result.body, target.content)
    dom = answer_render(url=result.url, status=result.status, headers=result.headers, body=result.body,
                        own_check=check_guard(target.trusted))  # fmt: skip
    if isinstance(dom, str):
        return f"could not render the page: {dom}"
    return content_failure(dom, target.content)


def fetch_http(targets: Sequence[Target]) -> list[Checked]:
    fetchable = [t for t in targets if not t.problem]
    guards = {trusted: check_guard(trusted) for trusted in {t.trusted for t in fetchable}}
    requests = [
        CheckRequest(
            t.url,
            guards[t.trusted],
            keep_body=bool(t.content) or any(a.kind == "json" for a in t.assertions),
            keep_first_bytes=settings.EVIDENCE_BODY_BYTES,  # a failing answer's start is kept as evidence
        )
        for t in fetchable
    ]
    timed = iter(_checker().check_all(requests))  # never raises
    out = []
    for target in targets:
        if target.problem:
            log.warning("server %s not checked: unusable monitor settings (%s)", target.server_id, target.problem)
            out.append(Checked(target, _unchecked(target), timezone.now(), Category.ERROR.value))
            continue
        started_at, result = next(timed)
        if result.failure is FailureKind.FORBIDDEN_ADDRESS:
            result = replace(result, detail=REFUSED)  # not which address, nor why: see monitoring.services.trust
        latency_s = result.timings.total_ms / 1000.0
        category = classify(result.status, latency_s, target.threshold_s, target.accepted).value
        checked = Checked(target, result, datetime.fromtimestamp(started_at, UTC), category)
        if result.failure is FailureKind.TLS:
            # An expired, mismatched or untrusted certificate: the server answers, wrongly.
            checked.category = Category.ERROR.value
        elif target.content and category in (Category.NORMAL.value, Category.DELAY.value):
            why = _content_failure(target, result)
            if why is not None:
                checked.category, checked.failure, checked.detail = Category.ERROR.value, "content", why
        if target.assertions and checked.category in (Category.NORMAL.value, Category.DELAY.value):
            why = assertion_failure(
                target.assertions,
                status=result.status,
                headers=result.headers,
                body=result.body,
                total_ms=result.timings.total_ms,
            )
            if why is not None:
                checked.category, checked.failure, checked.detail = Category.ERROR.value, "assertion", why
        out.append(checked)
    return out
