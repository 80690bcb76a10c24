"""Planning the file's servers: each named by its URL, checked as the admin checks a server, and held to the
role rules of who may create one or change its group and its superuser-only fields. Servers are never pruned:
the crawl finds most of them."""

from __future__ import annotations

from crawladmin.configfile.keys import SERVER_KEYS
from crawladmin.configfile.plan import (
    Plan,
    _cleaned,
    _entries,
    _origin,
    _plan_item,
    _server_of,
    _start,
    _upsert,
    _Where,
)
from crawlcore import roles
from crawlcore.models import Server

SERVER_FIELDS = tuple(k for k in SERVER_KEYS if k != "url")


def _plan_servers(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    for item, where in _entries(items, lines, plan, "servers", SERVER_KEYS, "must be a mapping with at least url"):
        origin = _origin(item.get("url"))
        if origin is None:
            where.problem(
                "url", "required: the server's URL, e.g. https://www.example.org or tcp://db.example.org:5432"
            )
            continue
        existing = _server_of(origin)
        start = _start(Server, existing, SERVER_FIELDS, item)
        server = Server(scheme=origin[0], host=origin[1], port=origin[2], **start)
        if not _cleaned(server, where):
            continue
        name = server.origin
        if name in servers_in_file:
            where.problem("url", f"{name} is named twice")
            continue
        servers_in_file[name] = origin
        if not _server_allowed(where, existing, {k: getattr(server, k) for k in SERVER_FIELDS}):
            continue
        given = {k: getattr(server, k) for k in SERVER_FIELDS if k in item}
        create = {"scheme": origin[0], "host": origin[1], "port": origin[2],
                  **{k: getattr(server, k) for k in SERVER_FIELDS}}  # fmt: skip

        def write(dry: bool, changes: list[str], origin=origin, given=given, create=create) -> str:
            return _upsert(Server, _server_of(origin), given, create, dry, changes)

        _plan_item(plan, "server", name, write)


def _server_allowed(where: _Where, existing: Server | None, values: dict) -> bool:
    """The actor's role rules for this server: created (a superuser's), or updated within its groups (the row
    as it is and as it will be) with the superuser's fields unchanged."""
    if existing is None:
        return where.allowed("create", "server", group=values.get("group", ""), key="url")
    if not (where.allowed("update", "server", group=existing.group, key="group")
            and where.allowed("update", "server", group=values.get("group", ""), key="group")):  # fmt: skip
        return False
    current = {k: getattr(existing, k) for k in values}
    reason = roles.fields_refusal(where.plan.actor, "server", values, current)
    if reason is not None:
        where.refuse(reason.split(":", 1)[0], reason)
        return False
    return True
