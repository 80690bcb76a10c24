"""Reads for the link reports: which links are broken right now (from the crawl core's tables), and the
recorded breaks, streamed for an export in bounded memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Count, Exists, F, FloatField, OuterRef, Q, Sum, Value, Window
from django.db.models.functions import Coalesce

from crawlcore.db import features
from crawlcore.models import Link, Page, Url
from crawlcore.server_filter import servers_named
from crawler.brokenlinks import MISSING_ANCHOR, Hop, Verdict, chain_text, missing_fragments, verdict_of, within_site
from crawler.lifecycle import State
from crawler.urlnorm import url_hash

from .models import LinkBreak

FAILING = frozenset({State.NO_RESPONSE_1.value, State.NO_RESPONSE_2.value, State.DEAD.value})
CHUNK = 2000  # rows fetched at a time: what bounds an export's memory
_IN_CHUNK = 500  # ids per IN (...) list (SQLite's variable limit)
_LONG_IN_CHUNK = 20_000  # on PostgreSQL


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


@dataclass(frozen=True)
class LinkScope:
    """The links a refresh looks at: those carried by `sources`, those pointing at `targets` (URL ids), and
    every link with an id after `links_after` (None: none by id)."""

    sources: frozenset[int]
    targets: frozenset[int]
    links_after: int | None = None


def chunks(values) -> Iterator[list]:
    """`values` sorted, in lists short enough for an IN (...) list: fewer, longer ones where the database takes
    them (a refresh after thousands of URL moves is then tens of statements, not thousands)."""
    ordered = sorted(values)
    size = _LONG_IN_CHUNK if features.long_in_lists() else _IN_CHUNK
    for i in range(0, len(ordered), size):
        yield ordered[i : i + size]


def _scoped(qs, scope: LinkScope | None) -> Iterator:
    """`qs` (links) whole, or for each chunk of the scope's sources and targets and for its new links: a link
    in more than one comes more than once."""
    if scope is None:
        yield qs
        return
    for chunk in chunks(scope.sources):
        yield qs.filter(from_url_id__in=chunk)
    for chunk in chunks(scope.targets):
        yield qs.filter(to_url_id__in=chunk)
    if scope.links_after is not None:
        yield qs.filter(id__gt=scope.links_after)


def breaking(url_ids) -> set[int]:
    """Of `url_ids` (a subquery of URL ids), the URLs a link can be broken by now: failing, or leading on (a
    redirect, or a bad one)."""
    urls = Url.objects.filter(Q(state__in=FAILING, exclusion_reason="") | _redirecting(), id__in=url_ids)
    return set(urls.values_list("id", flat=True))


def fragment_targets(links) -> set[int]:
    """The URLs that links of `links` (a Link queryset) point at by #fragment (a partial index holds only
    those links)."""
    return set(links.exclude(fragments="").order_by().values_list("to_url_id", flat=True).distinct())


def open_break_ends(url_ids) -> tuple[set[int], set[int]]:
    """For the open breaks: the pages among `url_ids` (a subquery of URL ids) that carry one, and the targets
    that may have changed: those among `url_ids`, and every one broken through a redirect chain (a hop further
    on may have moved). Each a semi-join in the database: open breaks may be hundreds of thousands."""
    open_ = LinkBreak.objects.filter(fixed_at__isnull=True).order_by()
    pages = open_.filter(from_url_id__in=url_ids).values_list("from_url_id", flat=True).distinct()
    targets = open_.filter(to_url_id__in=url_ids).values_list("to_url_id", flat=True).distinct()
    through = open_.exclude(redirect_chain="").exclude(failure_kind=MISSING_ANCHOR)
    return set(pages), set(targets) | set(through.values_list("to_url_id", flat=True).distinct())


def broken_links_now(*, scope: LinkScope | None = None) -> Iterator[Broken]:
    """Every link broken now (of `scope` only, when given), from the crawl core's tables: to a failing URL,
    through a redirect chain that ends broken, or to a missing #fragment, in that order (a link may come
    more than once: its first reason is the one that counts). Targets set aside (robots.txt, out of scope)
    were never checked: not broken."""
    yield from _to_failing(scope)
    yield from _through_redirects(scope)
    yield from _missing_fragments(scope)


def _to_failing(scope: LinkScope | None) -> Iterator[Broken]:
    links = (
        _real_links()
        .filter(to_url__state__in=FAILING, to_url__exclusion_reason="")
        .values_list(*_LINK, "to_url__last_status", "to_url__failure_kind", "to_url__last_checked_at")
        .order_by()
    )
    for rows in _scoped(links, scope):
        for f, t, site, text, element, page_checked, status, kind, checked in rows.iterator(chunk_size=CHUNK):
            yield Broken(f, t, site, text, element, status, kind or "no response", "", _looked(page_checked, checked))


_HOP = ("id", "url", "state", "last_status", "failure_kind", "redirect_to", "last_checked_at", "exclusion_reason")


def _redirecting() -> Q:
    """A URL of a redirect chain that leads on (or whose redirect was bad): a Visited URL not set aside."""
    return Q(state=State.VISITED.value, exclusion_reason="") & (
        ~Q(redirect_to="") | Q(failure_kind__startswith="bad_redirect")
    )


def _is_redirecting(state: str, kind: str, redirect_to: str, excluded: str) -> bool:
    return state == State.VISITED.value and not excluded and bool(redirect_to or kind.startswith("bad_redirect"))


def redirect_verdicts(*, heads: Collection[int] | None = None) -> dict[int, tuple[Verdict, datetime | None]]:
    """Each redirecting URL whose chain ends broken (of `heads` only, when given): its verdict and its last
    check. Without `heads`, reads every redirecting URL of the crawl and the URLs they point to (memory grows
    with the number of redirects, not pages); with them, walks their chains only, a hop at a time."""
    hops: dict[int, Hop] = {}
    checked: dict[int, datetime | None] = {}
    if heads is None:
        rows = list(Url.objects.filter(_redirecting()).values_list(*_HOP).order_by().iterator(chunk_size=CHUNK))
    else:
        rows = [r for chunk in chunks(heads) for r in Url.objects.filter(id__in=chunk).values_list(*_HOP).order_by()]
    # Each round reads the next hop of every chain; a chain is followed up to one hop past the limit,
    # as far as verdict_of looks.
    for _ in range(settings.CRAWL_MAX_REDIRECTS + 2):
        targets: dict[str, list[int]] = {}
        for pk, url, state, status, kind, redirect_to, at, excluded in rows:
            if pk in hops:
                continue
            if _is_redirecting(state, kind, redirect_to, excluded):
                hops[pk] = Hop(url, State.VISITED.value, status, kind)
                checked[pk] = at
                if redirect_to:
                    targets.setdefault(redirect_to, []).append(pk)
            else:  # the chain's end
                hops[pk] = Hop(url, "" if excluded else state, status, kind)
        if not targets:
            break
        by_hash = {url_hash(url): url for url in targets}
        rows = []
        for chunk in chunks(by_hash):
            for row in Url.objects.filter(url_hash__in=chunk).values_list("url_hash", *_HOP).order_by():
                for source in targets[by_hash[row[0]]]:
                    hops[source] = dataclasses.replace(hops[source], redirect_to=row[1])
                rows.append(row[1:])
        if heads is None:  # every redirecting URL is read already: the rest are the chains' ends
            rows = [r for r in rows if r[0] not in hops]
    wanted = checked if heads is None else {pk: checked[pk] for pk in heads if pk in checked}
    out = {}
    for pk, at in wanted.items():
        verdict = verdict_of(pk, hops, FAILING, settings.CRAWL_MAX_REDIRECTS)
        if verdict is not None:
            out[pk] = (verdict, at)
    return out


def redirects_into(url_ids: Collection[int]) -> set[int]:
    """The redirecting URLs whose chains pass through any of `url_ids` (not those themselves), found
    backwards through the link the crawl records for each redirect (crawlcore.services.load: a link with
    no element from the redirecting URL to its target), as many hops back as a chain may have."""
    found: set[int] = set()
    frontier = set(url_ids)
    for _ in range(settings.CRAWL_MAX_REDIRECTS + 1):
        new: set[int] = set()
        for chunk in chunks(frontier):
            new.update(
                Link.objects.filter(to_url_id__in=chunk, element="")
                .exclude(from_url__redirect_to="")
                .values_list("from_url_id", flat=True)
            )
        frontier = new - found - set(url_ids)
        if not frontier:
            break
        found |= frontier
    return found


def _through_redirects(scope: LinkScope | None) -> Iterator[Broken]:
    if scope is None:
        verdicts = redirect_verdicts()
        links = _real_links().values_list(*_LINK).order_by()
        queries = (links.filter(to_url_id__in=chunk) for chunk in chunks(verdicts))
    else:
        # The chains to walk: the targets of the scope, and those the sources' links point at that redirect.
        onward = _real_links().filter(
            Q(to_url__state=State.VISITED.value, to_url__exclusion_reason="")
            & (~Q(to_url__redirect_to="") | Q(to_url__failure_kind__startswith="bad_redirect"))
        )
        heads = set(scope.targets)
        for chunk in chunks(scope.sources):
            heads.update(onward.filter(from_url_id__in=chunk).values_list("to_url_id", flat=True))
        if scope.links_after is not None:
            heads.update(onward.filter(id__gt=scope.links_after).values_list("to_url_id", flat=True))
        verdicts = redirect_verdicts(heads=heads)
        queries = _scoped(onward.values_list(*_LINK).order_by(), scope)
    for rows in queries:
        for f, t, site, text, element, page_checked in rows.iterator(chunk_size=CHUNK):
            if t not in verdicts:
                continue
            verdict, checked = verdicts[t]
            yield Broken(
                f, t, site, text, element, verdict.status, verdict.failure_kind, chain_text(verdict.chain),
                _looked(page_checked, checked),
            )  # fmt: skip


def _missing_fragments(scope: LinkScope | None) -> Iterator[Broken]:
    mode = settings.CRAWL_CHECK_FRAGMENTS
    if mode == "off":
        return
    links = (
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
    for rows in _scoped(links, scope):
        for row in rows.iterator(chunk_size=CHUNK):
            f, t, site, _text, element, page_checked, fragments, to_site, anchors, status, checked, url = row
            missing = missing_fragments(fragments, anchors) if within_site(site == to_site, mode) else []
            if missing:
                # One row per link: the first missing fragment's own anchor text; the chain column names them all.
                where = ", ".join(f"{url}#{fragment}" for fragment, _ in missing)
                looked = _looked(page_checked, checked)
                yield Broken(f, t, site, missing[0][1], element, status, MISSING_ANCHOR, where, looked)


def fragment_targets_waiting(url_ids: Collection[int] | None = None) -> set[int]:
    """URLs (of `url_ids`, or all) whose stored page waits for the extract agent and which some link points
    at by #fragment: their anchors, what those links are checked against, are not written yet."""
    if settings.CRAWL_CHECK_FRAGMENTS == "off":
        return set()
    linked = Exists(Link.objects.filter(to_url_id=OuterRef("url_id")).exclude(fragments=""))
    pages = Page.objects.filter(extracted_at__isnull=True).filter(linked)
    if url_ids is None:
        return set(pages.values_list("url_id", flat=True))
    return {pk for chunk in chunks(url_ids) for pk in pages.filter(url_id__in=chunk).values_list("url_id", flat=True)}


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
