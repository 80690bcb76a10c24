"""Seed 003's site dedup before dispatch: a server on the address of a known site fetches its home page first.

The paper's coordinator turns site URLs into IPs and drops repeated IPs before it hands sites to agents. An
address alone does not make two host names one site: name-based virtual hosting (universities, shared hosting)
serves many sites from one address, and merging them would lose all but one. So a new server's address is
resolved when it is created (servers_ensure), and a server with a *twin* — an earlier site, not an alias,
with the same address, scheme and port — is a *suspect*: its load batch claims its home page (`/`) alone
(urls_claim's `only`). When the page is stored, server_merge_if_alias compares it with the twin's: the same
checksum makes the suspect an alias and sets its other URLs aside before any is fetched; a different one
leaves two sites, and the next batch claims as usual.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.utils import timezone

from crawlcore.models import Server, Url
from crawler.lifecycle import State
from crawler.scope import Scope
from crawler.urlnorm import url_hash

from .job_admission import jobs_admit
from .urls import NewUrl, urls_insert


def server_twin(*, server: Server) -> Server | None:
    """The earlier site on the server's address, scheme and port, or None (no address, no such site, or
    site dedup by address switched off)."""
    if not (settings.CRAWL_MERGE_HOSTS and settings.CRAWL_MERGE_BY_ADDRESS and server.ip):
        return None
    twins = Server.objects.filter(
        ip=server.ip, scheme=server.scheme, port=server.port, alias_of__isnull=True, id__lt=server.id
    )
    return twins.order_by("id").first()


def server_home_first(*, server: Server, now: datetime | None = None) -> int | None:
    """The id of the one URL a load batch of `server` may claim — its home page, when the server is a suspect
    whose home page has not been fetched — or None: claim as usual.

    A home page URL not known yet is inserted as Init (with the scope and depth of the server's shallowest
    due URL), so the next claim takes it. A suspect never stalls on its home page: once the home URL has been
    tried (Visited, NoResponse, Dead), is set aside (robots.txt), or waits out a back-off or a failed attempt
    (Init, not due), the server's URLs are claimed as usual. The common case, a server with no twin or its
    home page done, costs one indexed read."""
    now = now or timezone.now()
    home = f"{server.origin}/"
    row = Url.objects.filter(url_hash=url_hash(home)).values("id", "state", "exclusion_reason", "next_check_at").first()
    waiting = row is None or (
        row["state"] == State.INIT.value
        and not row["exclusion_reason"]
        and row["next_check_at"] is not None
        and row["next_check_at"] <= now
    )
    if not waiting or server_twin(server=server) is None:
        return None
    if row is not None:
        return row["id"]
    parent = (
        Url.objects.filter(server_id=server.id, state=State.INIT.value, next_check_at__lte=now)
        .order_by("depth", "id")
        .first()
    )
    if parent is None:
        return None  # nothing due: the claim finds nothing either way
    # Same host as the parent, so just as much in the crawl's scope, at the same depth.
    scope = Scope(parent.scope_mode, parent.scope_root, parent.offsite_hops)
    new = NewUrl(home, depth=parent.depth, scope=scope)
    admission = jobs_admit(links=[(parent.id, home, 0)])  # a job's server: where its jobs allow
    if admission.applies(parent.id):
        new = admission.candidate(new)
        if new.exclusion_reason:
            return None
    ids = urls_insert(urls=[new]).ids
    admission.record(ids)
    return ids.get(home)
