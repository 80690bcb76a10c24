"""Reads for the link reports: which links are broken right now (from the crawl core's tables), and the
recorded breaks, streamed for an export in bounded memory."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Count, F, FloatField, Q, Sum, Value, Window
from django.db.models.functions import Coalesce

from crawlcore.models import Link, Page, Url
from crawlcore.server_filter import servers_named
from crawler.brokenlinks import MISSING_ANCHOR, Hop, Verdict, chain_text, missing_fragments, verdict_of, within_site
from crawler.lifecycle import State
from crawler.urlnorm import url_hash

from .models import LinkBreak

FAILING = frozenset({State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value})
CHUNK = 2000  # rows fetched at a time: what bounds an export's memory
_IN_CHUNK = 500  # ids per IN (...) list (SQLite's variable limit)


@dataclass(frozen=True, slots=True)
class Broken:
    """One link broken right now."""

    from_url_id: int
    to_url_id: int
    site_id: int  # the server of the page carrying the link
    anchor_text: str
    element: str
    status: int | None
    failure_kind: str
    redirect_chain: str  # the chain a redirect took; for a missing anchor, the link's URL with each fragment
    last_checked_at: datetime | None  # when the crawl last looked at the link: its page or its target


_LINK = ("from_url_id", "to_url_id", "from_url__server_id", "anchor_text", "element", "from_url__last_checked_at")


def _looked(page_checked: datetime | None, target_checked: datetime | None) -> datetime | None:
    """When the crawl last saw the link: the later of its page's fetch and its target's check (the link is
    known broken from the moment both were seen), so a break is never first seen after its last check."""
    known = [t for t in (page_checked, target_checked) if t is not None]
    return max(known) if known else None


def _real_links():
    """Links written on pages. The crawl also records each redirect as a link from the redirecting URL
    (no element): that is a hop of a chain, not a link a reader follows."""
    return Link.objects.exclude(Q(element="") & ~Q(from_url__redirect_to=""))


def broken_links_now() -> Iterator[Broken]:
    """Every link broken now, from the crawl core's tables: to a failing URL, through a
    redirect chain that ends broken, or to a missing #fragment. Each link at most once (the first reason
    found, in that order). Targets set aside (robots.txt, out of scope) were never checked: not broken."""
    yield from _to_failing()
    yield from _through_redirects()
    yield from _missing_fragments()


def _to_failing() -> Iterator[Broken]:
    rows = (
        _real_links()
        .filter(to_url__state__in=FAILING, to_url__exclusion_reason="")
        .values_list(*_LINK, "to_url__last_status", "to_url__failure_kind", "to_url__last_checked_at")
        .order_by()
    )
    for f, t, site, text, element, page_checked, status, kind, checked in rows.iterator(chunk_size=CHUNK):
        yield Broken(f, t, site, text, element, status, kind or "no response", "", _looked(page_checked, checked))


def redirect_verdicts() -> dict[int, tuple[Verdict, datetime | None]]:
    """Each redirecting URL whose chain ends broken: its verdict and its last check. Reads every redirecting
    URL of the crawl and the URLs they point to (memory grows with the number of redirects, not pages)."""
    hops: dict[int, Hop] = {}
    checked: dict[int, datetime | None] = {}
    targets: dict[str, list[int]] = {}
    redirects = (
        Url.objects.filter(state=State.VISITED.value, exclusion_reason="")
        .filter(~Q(redirect_to="") | Q(failure_kind__startswith="bad_redirect"))
        .values_list("id", "url", "last_status", "failure_kind", "redirect_to", "last_checked_at")
        .order_by()
    )
    for pk, url, status, kind, redirect_to, at in redirects.iterator(chunk_size=CHUNK):
        hops[pk] = Hop(url, State.VISITED.value, status, kind)
        checked[pk] = at
        if redirect_to:
            targets.setdefault(redirect_to, []).append(pk)
    by_hash = {url_hash(url): url for url in targets}
    keys = list(by_hash)
    for i in range(0, len(keys), _IN_CHUNK):
        found = Url.objects.filter(url_hash__in=keys[i : i + _IN_CHUNK]).values_list(
            "url_hash", "id", "url", "state", "last_status", "failure_kind", "exclusion_reason"
        )
        for h, pk, url, state, status, kind, excluded in found:
            for source in targets[by_hash[h]]:
                hops[source] = Hop(
                    hops[source].url, hops[source].state, hops[source].status, hops[source].failure_kind, pk
                )
            if pk not in hops:  # the chain's end (a redirecting URL is in hops already)
                hops[pk] = Hop(url, "" if excluded else state, status, kind)
    out = {}
    for pk in checked:
        verdict = verdict_of(pk, hops, FAILING, settings.CRAWL_MAX_REDIRECTS)
        if verdict is not None:
            out[pk] = (verdict, checked[pk])
    return out


def _through_redirects() -> Iterator[Broken]:
    verdicts = redirect_verdicts()
    ids = sorted(verdicts)
    for i in range(0, len(ids), _IN_CHUNK):
        rows = _real_links().filter(to_url_id__in=ids[i : i + _IN_CHUNK]).values_list(*_LINK).order_by()
        for f, t, site, text, element, page_checked in rows.iterator(chunk_size=CHUNK):
            verdict, checked = verdicts[t]
            yield Broken(
                f, t, site, text, element, verdict.status, verdict.failure_kind, chain_text(verdict.chain),
                _looked(page_checked, checked),
            )  # fmt: skip


def _missing_fragments() -> Iterator[Broken]:
    mode = settings.CRAWL_CHECK_FRAGMENTS
    if mode == "off":
        return
    rows = (
        _real_links()
        .exclude(fragments="")
        .filter(to_url__state=State.VISITED.value, to_url__page__anchors__isnull=False)
        .values_list(
            *_LINK,
            "fragments",
            "to_url__server_id",
            "to_url__page__anchors",
            "to_url__last_status",
            "to_url__last_checked_at",
            "to_url__url",
        )
        .order_by()
    )
    for f, t, site, _text, element, page_checked, fragments, to_site, anchors, status, checked, url in rows.iterator(
        chunk_size=CHUNK
    ):
        missing = missing_fragments(fragments, anchors) if within_site(site == to_site, mode) else []
        if missing:
            # One row per link: the first missing fragment's own anchor text; the chain column names them all.
            where = ", ".join(f"{url}#{fragment}" for fragment, _ in missing)
            looked = _looked(page_checked, checked)
            yield Broken(f, t, site, missing[0][1], element, status, MISSING_ANCHOR, where, looked)


# ------------------------------------------------------------------------------------------------------
# The recorded breaks (LinkBreak), as the export and the site report read them

EXPORT_COLUMNS = (
    "site", "owner", "source_url", "anchor_text", "element", "target_url", "status", "failure_kind",
    "redirect_chain", "first_broken_at", "last_checked_at",
)  # fmt: skip
# The export ordered by impact has one column more, last: IMPACT.
IMPACT = "impact"
SORTS = ("site", "impact")


def with_impact(qs):
    """Open breaks with `impact`: the summed stored BlockRank of the pages (among `qs`) carrying a link to the
    same broken target, so a target that pages people reach link to counts most; and `source_rank`, the rank
    of the page carrying this one. Pages never ranked count 0. Ordered by impact, then by the page's rank."""
    source_rank = Coalesce(F("from_url__pagerank__rank"), Value(0.0), output_field=FloatField())
    return (
        qs.annotate(source_rank=source_rank)
        .annotate(impact=Window(Sum(source_rank), partition_by=[F("to_url_id")]))
        .order_by("-impact", "-source_rank", "site_id", "from_url_id", "to_url_id")
    )


def link_breaks_open(
    *,
    site: str = "",
    group: str = "",
    since: datetime | None = None,
    server_id: int | None = None,
    groups: frozenset[str] | None = None,
    sort: str = "site",
):
    """The open breaks (not fixed), filtered: `site` a host, host:port or origin, `group` a server group, `since` first
    seen broken at or after, `groups` the server groups a reader may see (None: all); ordered by site, source
    page, target, or with `sort="impact"` by impact (`with_impact`: each row has `impact`)."""
    qs = LinkBreak.objects.filter(fixed_at__isnull=True)
    if groups is not None:
        qs = qs.filter(site__group__in=sorted(groups))
    if server_id is not None:
        qs = qs.filter(site_id=server_id)
    if site:
        qs = qs.filter(site__in=servers_named(site))
    if group:
        qs = qs.filter(site__group=group)
    if since is not None:
        qs = qs.filter(first_broken_at__gte=since)
    if sort == IMPACT:
        return with_impact(qs)
    return qs.order_by("site__host", "site__port", "site_id", "from_url_id", "to_url_id")


def dead_links_export_rows(**filters) -> Iterator[dict]:
    """The export's rows (EXPORT_COLUMNS, plain values; and IMPACT with `sort="impact"`), streamed: a chunk of
    rows in memory at a time, however many there are."""
    impact = filters.get("sort") == IMPACT
    rows = link_breaks_open(**filters).values_list(
        "site__scheme", "site__host", "site__port", "site__owner_name", "site__owner_email", "from_url__url",
        "anchor_text", "element", "to_url__url", "status", "failure_kind", "redirect_chain", "first_broken_at",
        "last_checked_at", *(["impact"] if impact else []),
    )  # fmt: skip
    for (
        scheme,
        host,
        port,
        owner,
        email,
        source,
        text,
        element,
        target,
        status,
        kind,
        chain,
        first,
        checked,
        *extra,
    ) in rows.iterator(chunk_size=CHUNK):
        default = {"http": 80, "https": 443}.get(scheme)
        if kind == MISSING_ANCHOR:
            # The record keeps the link's URL with each fragment that names nothing where a redirect chain
            # would be; the export puts it where it belongs: the target is the URL with its fragment.
            target, chain = chain.split(", ")[0] or target, ""
        row = {
            "site": f"{scheme}://{host}" + ("" if port == default else f":{port}"),
            "owner": f"{owner} <{email}>" if owner and email else owner or email,
            "source_url": source,
            "anchor_text": text,
            "element": element,
            "target_url": target,
            "status": status,
            "failure_kind": kind,
            "redirect_chain": chain,
            "first_broken_at": first.isoformat() if first else "",
            "last_checked_at": checked.isoformat() if checked else "",
        }
        if impact:
            row[IMPACT] = float(extra[0] or 0.0)
        yield row


def link_breaks_of_site(*, server_id: int, after: tuple[int, int] | None = None, limit: int = 200) -> list[dict]:
    """One page of a site's open breaks, by source page then target (an index range of linkbreak_open_idx),
    from `after` (the last (source id, target id) of the previous page) on, with each source page's title.
    A target that failed itself and answers again is left out at once, before the next refresh records
    the fix (its state is read live)."""
    qs = _still_broken(LinkBreak.objects.filter(site_id=server_id, fixed_at__isnull=True))
    if after is not None:
        qs = qs.filter(Q(from_url_id__gt=after[0]) | Q(from_url_id=after[0], to_url_id__gt=after[1]))
    rows = list(
        qs.order_by("from_url_id", "to_url_id").values(
            "from_url_id", "to_url_id", "from_url__url", "to_url__url", "to_url__state", "anchor_text", "element",
            "status", "failure_kind", "redirect_chain", "first_broken_at", "last_checked_at",
        )[:limit]
    )  # fmt: skip
    titles = dict(Page.objects.filter(url_id__in={r["from_url_id"] for r in rows}).values_list("url_id", "title"))
    for r in rows:
        r["title"] = titles.get(r["from_url_id"]) or ""
    return rows


def link_breaks_first(*, server_id: int, limit: int = 10) -> list[dict]:
    """A site's open breaks of most impact ("fix these first"): the summed rank of the pages carrying a link
    to the same target (with_impact), each with its impact."""
    qs = with_impact(_still_broken(LinkBreak.objects.filter(site_id=server_id, fixed_at__isnull=True)))
    return list(
        qs.values("from_url_id", "to_url_id", "from_url__url", "to_url__url", "anchor_text", "status",
                  "failure_kind", "impact")[:limit]
    )  # fmt: skip


def _still_broken(qs):
    """Leave out the breaks whose target failed itself and answers again: the pages show the fix at once,
    before the next refresh records it (the target's state is read live)."""
    return qs.exclude(Q(redirect_chain="") & ~Q(to_url__state__in=FAILING))


def link_breaks_count(*, server_id: int) -> int:
    return LinkBreak.objects.filter(site_id=server_id, fixed_at__isnull=True).count()


def link_break_sites(*, limit: int) -> list[dict]:
    """The sites whose pages carry open breaks, most first (at most `limit`): per site, broken links, the
    pages carrying them, the distinct broken targets and how many of those are Dead. The one set of
    dead-link figures: the overview, a site's page (link_breaks_count) and the export count these rows."""
    return list(
        LinkBreak.objects.filter(fixed_at__isnull=True)
        .values("site_id")
        .annotate(
            links=Count("id"),
            pages=Count("from_url_id", distinct=True),
            targets=Count("to_url_id", distinct=True),
            dead=Count("to_url_id", distinct=True, filter=Q(to_url__state=State.DEAD.value)),
        )
        .order_by("-links", "site_id")[:limit]
    )
