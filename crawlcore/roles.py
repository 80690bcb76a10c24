"""What each role may do to each object, written once: the admin's pages (crawlcore.admin_base), the REST API
(crawladmin.api_auth, crawladmin.api_v1) and the configuration file (crawladmin.configfile, `manage.py apply`)
all ask `may` / `refusal` / `check` here, so the three cannot disagree.

The roles (crawlcore.access says how a user gets them): a **viewer** reads; an **operator** also runs the
crawl and the monitor day to day (a server's crawl settings and actions, its monitor's checks, mutes,
maintenance, incident updates, crawl jobs); a **superuser** does everything, and alone decides what is
fetched from where and who hears of it (servers' addresses and trust, monitors' kind and nameserver, alert
channels and their routing, status pages, other users' tokens). A viewer or an operator limited to server
groups (``servers:<g>``) acts only on rows of those groups and on nothing that covers every server.

The table is data (RULES) so that a test can walk every role × object × action through the three doors.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied

from . import access

NONE, VIEWER, OPERATOR, SUPERUSER = 0, 1, 2, 3
ROLE_NAMES = {NONE: "no role", VIEWER: "viewer", OPERATOR: "operator", SUPERUSER: "superuser"}

OBJECTS = ("server", "monitor", "channel", "rule", "mute", "maintenance", "status_page", "incident", "job",
           "token")  # fmt: skip
ACTIONS = ("read", "create", "update", "delete", "run")


@dataclass(frozen=True)
class Allowed:
    """The least role for an action on an object, and whether its rows reach a server group (then a reader
    limited to groups acts on its groups' rows only; otherwise the object covers every server and such a
    reader is refused)."""

    role: int
    grouped: bool = True


_S = Allowed(SUPERUSER)
_O = Allowed(OPERATOR)
_V = Allowed(VIEWER)
_SUPER_ONLY = {a: Allowed(SUPERUSER, grouped=False) for a in ACTIONS}

RULES: dict[str, dict[str, Allowed]] = {
    # run: enable / disable, pin, crawl now, revive Dead URLs. create and delete: the address is the server.
    "server": {"read": _V, "create": _S, "update": _O, "delete": _S, "run": _O},
    # run: check now. A monitor comes and goes with what is checked, a superuser's decision.
    "monitor": {"read": _V, "create": _S, "update": _O, "delete": _S, "run": _O},
    # Destinations hold secrets and rules decide who hears of every server: superusers only.
    "channel": _SUPER_ONLY,
    "rule": _SUPER_ONLY,
    "mute": {"read": _V, "create": _O, "update": _O, "delete": _O, "run": _O},
    "maintenance": {"read": _V, "create": _O, "update": _O, "delete": _O, "run": _O},
    # A status page is public: what it shows is a superuser's to decide.
    "status_page": {"read": _V, "create": _S, "update": _S, "delete": _S, "run": _S},
    # The monitor opens incidents; operators annotate them (updates), superusers remove them.
    "incident": {"read": _V, "create": _S, "update": _O, "delete": _S, "run": _O},
    # run: start, pause, resume, stop.
    "job": {"read": _V, "create": _O, "update": _O, "delete": _O, "run": _O},
    # One's own token (see `may`'s `owner`): any reader; another user's: a superuser.
    "token": {"read": _V, "create": _V, "update": _S, "delete": _V, "run": _S},
}

# Fields of an object that only a superuser sets, whoever may update the rest: what is fetched from where
# and who is told. A server's: its address, whether private addresses may be reached, its owner's address.
# A monitor's: what kind of check it is and the nameserver a DNS check asks (a query to any address).
SUPERUSER_FIELDS: dict[str, tuple[str, ...]] = {
    "server": access.SUPERUSER_SERVER_FIELDS,
    "monitor": ("kind", "dns_server", "server"),
}


def role_of(user) -> int:
    """The user's role: SUPERUSER, OPERATOR, VIEWER or NONE (inactive, anonymous, or in no reader group).
    None is the shell (`manage.py apply`, a command): a superuser."""
    if user is None:
        return SUPERUSER
    if not (user.is_authenticated and user.is_active):
        return NONE
    if user.is_superuser:
        return SUPERUSER
    cached = getattr(user, "_crawladmin_role", None)
    if cached is not None:
        return cached
    names = set(user.groups.filter(name__in=access.READER_GROUPS).values_list("name", flat=True))
    role = OPERATOR if "operator" in names else VIEWER if "viewer" in names else NONE
    user._crawladmin_role = role  # one query per request, however many checks ask
    return role


def _groups(user) -> frozenset[str] | None:
    return None if user is None else access.server_groups_of(user)


def refusal(user, action: str, obj: str, *, group: str | None = None, owner: object = None) -> str | None:
    """Why `user` may not do `action` to `obj` (None when it may). `group`: the server group of the row
    (of the new row, for create); None asks about the object in general (a list page, a form), where a
    limited reader may act on some rows of a grouped object. `owner`: for tokens, the token's user."""
    if obj not in RULES or action not in ACTIONS:
        raise ValueError(f"no rule for {action} {obj}")
    rule = RULES[obj][action]
    role = role_of(user)
    if role == NONE:
        return "for the viewer and operator groups"
    if obj == "token" and owner is not None and user is not None and owner != user.pk and role < SUPERUSER:
        return "another user's token is a superuser's"
    if role < rule.role:
        what = _PLURAL[obj]
        verb = "reading" if action == "read" else "changing" if action in ("create", "update", "delete") else "running"
        return f"{verb} {what} is for {ROLE_NAMES[rule.role]}s"
    allowed = _groups(user)
    if allowed is None or role == SUPERUSER:
        return None
    if not rule.grouped:
        return f"{_PLURAL[obj]} cover every server; your account is limited to server groups"
    if group is not None and group not in allowed:
        return f"your account is limited to the server groups {', '.join(sorted(allowed))}"
    return None


_PLURAL = {"server": "servers", "monitor": "monitors", "channel": "alert channels", "rule": "alert routing rules",
           "mute": "mutes", "maintenance": "maintenance windows", "status_page": "status pages",
           "incident": "incidents", "job": "crawl jobs", "token": "API tokens"}  # fmt: skip


def may(user, action: str, obj: str, *, group: str | None = None, owner: object = None) -> bool:
    return refusal(user, action, obj, group=group, owner=owner) is None


def check(user, action: str, obj: str, *, group: str | None = None, owner: object = None) -> None:
    """Raise PermissionDenied (the admin's and the API's 403) with the reason, unless allowed."""
    reason = refusal(user, action, obj, group=group, owner=owner)
    if reason is not None:
        raise PermissionDenied(reason)


def may_set_field(user, obj: str, name: str) -> bool:
    return role_of(user) == SUPERUSER or name not in SUPERUSER_FIELDS.get(obj, ())


def fields_refusal(user, obj: str, given: dict, current: dict | None) -> str | None:
    """Why `user` may not write `given` over `current` (None: a new row), for the superuser's fields: a
    field a user may not set may be sent unchanged (a whole object written back), never changed."""
    for name in SUPERUSER_FIELDS.get(obj, ()):
        if may_set_field(user, obj, name) or name not in given:
            continue
        if current is None or given[name] != current.get(name):
            return f"{name}: only a superuser sets it"
    return None


def seeds_refusal(user, seeds) -> str | None:
    """Why `user` may not start a crawl at `seeds` (None when it may): each seed's server must be one the user
    operates (`run` on a server of its groups). A seed on a server not known yet would add a server of no
    group, which only an operator of every group may do."""
    from crawler.urlnorm import UrlError, server_key

    from .models import Server

    if role_of(user) == SUPERUSER or _groups(user) is None:
        return refusal(user, "run", "server")
    allowed = _groups(user) or frozenset()
    for seed in seeds:
        try:
            key = server_key(seed)
        except (UrlError, ValueError):
            continue  # the job's own check says what is wrong with it
        group = Server.objects.filter(scheme=key.scheme, host=key.host, port=key.port).values_list(
            "group", flat=True).first()  # fmt: skip
        if group is None or group not in allowed:
            return f"seed {key.origin()}: not a server of your groups ({', '.join(sorted(allowed))})"
    return None
