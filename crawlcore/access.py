"""Who may read what: the viewer and operator groups, and a viewer's limit to server groups.

A user reads the dashboard, the analyzer, the API and /metrics when active and a superuser or in the
"viewer" or "operator" group (dashboard.migrations.0001_groups creates them). A reader may be limited to
server groups (`Server.group`, e.g. a faculty's sites) by Django groups named ``servers:<group>``: a user in
"viewer", "servers:physics" and "servers:chemistry" sees those two groups' servers and no others; a user in
no ``servers:`` group sees every server. The limit is made in the admin (Users and Groups), or mapped from
a directory's groups where single sign-on is configured; no table of its own.

A limited reader sees only what can be cut to its servers: the grid, a server's page, the dead-link report,
the heatmap, `/api/servers`. What describes the whole crawl (the crawl page, the analyzer, `/api/summary`,
`/metrics`) is for unlimited readers only.

Here, in the crawl core, so the analyzer as well as the dashboard and the API can ask. With single sign-on
(crawladmin.sso) a directory's groups are mapped onto these at each login.
"""

from __future__ import annotations

from collections.abc import Iterable

READER_GROUPS = ("viewer", "operator")
SCOPE_PREFIX = "servers:"


def may_read(user) -> bool:
    """A superuser, or an active user in the viewer or operator group."""
    if not (user.is_authenticated and user.is_active):
        return False
    return user.is_superuser or user.groups.filter(name__in=READER_GROUPS).exists()


def server_groups_of(user) -> frozenset[str] | None:
    """The server groups this reader is limited to; None when it may read every server."""
    if user.is_superuser:
        return None
    cached = getattr(user, "_crawladmin_server_groups", False)
    if cached is not False:
        return cached
    names = user.groups.filter(name__startswith=SCOPE_PREFIX).values_list("name", flat=True)
    groups = frozenset(name[len(SCOPE_PREFIX) :] for name in names) or None
    user._crawladmin_server_groups = groups  # one query per request, however many reads ask
    return groups


def sees_server_group(user, group: str) -> bool:
    allowed = server_groups_of(user)
    return allowed is None or group in allowed


def groups_from_directory(
    directory_groups: Iterable[str], *, viewer: Iterable[str], operator: Iterable[str], server_prefix: str
) -> set[str]:
    """The reader groups a directory's groups give (single sign-on, crawladmin.sso): "viewer" for any of
    `viewer`, "operator" for any of `operator`, and ``servers:<g>`` for each directory group named
    `server_prefix` + g (none when `server_prefix` is empty). Pure."""
    given = {g.strip() for g in directory_groups if isinstance(g, str) and g.strip()}
    out = set()
    if given & set(viewer):
        out.add("viewer")
    if given & set(operator):
        out.add("operator")
    if server_prefix:
        out |= {
            SCOPE_PREFIX + g[len(server_prefix) :] for g in given if g.startswith(server_prefix) and g != server_prefix
        }
    return out


def reader_groups_set(*, user, names: set[str]) -> None:
    """Make the user's reader groups (viewer, operator, servers:*) exactly `names`; other groups stay. The
    directory decides at each login: a group taken away there is taken away here."""
    from django.contrib.auth.models import Group

    managed = user.groups.filter(name__in=READER_GROUPS) | user.groups.filter(name__startswith=SCOPE_PREFIX)
    current = set(managed.values_list("name", flat=True))
    if current - names:
        user.groups.remove(*Group.objects.filter(name__in=current - names))
    if names - current:
        user.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in sorted(names - current)))
    user.__dict__.pop("_crawladmin_server_groups", None)


# The server fields that decide what is fetched and who hears of it: the address (scheme, host, port, ip),
# whether its private addresses may be reached (trusted), and who gets its alerts (owner_email). Only a
# superuser sets them, in the admin and wherever else servers are edited.
SUPERUSER_SERVER_FIELDS = ("trusted", "scheme", "host", "port", "ip", "owner_email")


def may_edit_server_field(user, name: str) -> bool:
    return user.is_superuser or name not in SUPERUSER_SERVER_FIELDS


def rows_q(user, group_paths: Iterable[str]):
    """The Q admitting the rows this reader may see, each row reaching a server group through any of
    `group_paths` (e.g. "server__group"); None when the reader is not limited. A limited reader and no path
    (what describes the whole crawl): a Q that admits nothing."""
    from django.db.models import Q

    allowed = server_groups_of(user)
    if allowed is None:
        return None
    q = Q(pk__in=[])
    for path in group_paths:
        q |= Q(**{f"{path}__in": sorted(allowed)})
    return q


def rows_visible(user, queryset, group_paths: Iterable[str]):
    """`queryset` cut to what this reader may see (rows_q)."""
    q = rows_q(user, group_paths)
    return queryset if q is None else queryset.filter(q)
