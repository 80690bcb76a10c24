"""The plan of a configuration file: what it asks to write (Planned, each write deferred until the whole file
passed), or its problems with their lines, and the steps every section's planner shares: where an entry is,
the models' own checks, the values an object is checked with, a server's address as (scheme, host, port), and
the write of one object that says what changed. Nothing is written here but by a Planned's write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db.models import Model

from alerts.models import Channel
from crawlcore import roles
from crawlcore.models import Server
from crawlcore.validate import MONITOR_SCHEMES
from crawler.urlnorm import ServerKey, UrlError, canonicalize, server_key

DEFAULT_PORTS = {"dns": 53, "heartbeat": 0}


@dataclass
class Planned:
    kind: str
    name: str
    write: Callable[[bool], str]  # write(dry_run) -> created | changed | unchanged | removed
    changes: list[str] = field(default_factory=list)  # "field: old -> new", filled by write


@dataclass
class Plan:
    items: list[Planned] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)  # key -> problem, of the last item (the API's one)
    refused: str = ""  # the first thing the actor may not do (crawlcore.roles): the API's 403
    actor: object = None  # the user applying it (crawlcore.roles); None: the shell, a superuser


class _Where:
    def __init__(self, lines: dict[tuple, int], path: tuple, label: str, plan: Plan):
        self.lines, self.path, self.label, self.plan = lines, path, label, plan

    def problem(self, key: str, message: str) -> None:
        line = self.lines.get((*self.path, key)) or self.lines.get(self.path) or 1
        where = f"{self.label}.{key}" if key else self.label
        self.plan.problems.append(f"{line}: {where}: {message}")
        self.plan.fields.setdefault(key or "non_field_errors", message)

    def allowed(self, action: str, obj: str, *, group: str | None, key: str = "") -> bool:
        """Whether the plan's actor may do `action` to `obj` of `group` (crawlcore.roles); if not, a problem."""
        reason = roles.refusal(self.plan.actor, action, obj, group=group)
        if reason is None:
            return True
        self.refuse(key, reason)
        return False

    def refuse(self, key: str, reason: str) -> None:
        self.problem(key, f"not allowed: {reason}")
        self.plan.refused = self.plan.refused or reason


def _validation_messages(exc: ValidationError) -> Iterator[tuple[str, str]]:
    if hasattr(exc, "error_dict"):
        for name, errors in exc.error_dict.items():
            for err in errors:
                yield name, " ".join(err.messages)
    else:
        yield "", " ".join(exc.messages)


def _cleaned(obj: Model, where: _Where, exclude: list[str] | None = None) -> bool:
    """The model's own checks (its fields, then its clean()): the admin's rules. clean() runs only on fields
    that parsed, so a value of the wrong type is one problem, never an error inside clean()."""
    try:
        obj.clean_fields(exclude=exclude)
        obj.clean()
    except ValidationError as exc:
        for name, message in _validation_messages(exc):
            where.problem(name, message)
        return False
    return True


def _start(model: type[Model], existing: Model | None, names: tuple[str, ...], item: dict) -> dict:
    """The values an object is checked with: what it has (a new one: the defaults), then what the file says."""
    base = {k: getattr(existing, k) if existing is not None else model._meta.get_field(k).get_default() for k in names}
    return {**base, **{k: item[k] for k in names if k in item}}


def _unknown(item: dict, known: tuple[str, ...], where: _Where) -> None:
    for key in item:
        if key not in known:
            where.problem(str(key), f"unknown key (known: {', '.join(known)})")


def _entries(
    items: list, lines, plan: Plan, section: str, known: tuple[str, ...], not_mapping: str
) -> Iterator[tuple[dict, _Where]]:
    """Each entry of a section that is a mapping, with where it is; one that is not is the problem
    `not_mapping`, and each key the section does not know is one too (the entry is still checked)."""
    for i, item in enumerate(items):
        where = _Where(lines, (section, i), f"{section}[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", not_mapping)
            continue
        _unknown(item, known, where)
        yield item, where


def _origin(url: object) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a server's URL: http(s), or the tcp://, dns:// or heartbeat:// row of a monitor."""
    if not isinstance(url, str):
        return None
    scheme = url.partition("://")[0].lower()
    if scheme in MONITOR_SCHEMES:
        try:
            parts = urlsplit(url.strip())
            port = parts.port if parts.port is not None else DEFAULT_PORTS.get(scheme)
        except ValueError:
            return None
        host = (parts.hostname or "").lower()
        if not host or port is None or parts.path not in ("", "/"):
            return None
        return scheme, host, port
    try:
        key = server_key(canonicalize(url))
    except (UrlError, KeyError):
        return None
    return key.scheme, key.host, key.port


def _shown(value: object) -> str:
    return "(empty)" if value in (None, "") else repr(value) if isinstance(value, str) else str(value)


def _upsert(model: type[Model], existing: Model | None, values: dict, create: dict, dry: bool,
            changes: list[str], secret: tuple[str, ...] = ()) -> str:  # fmt: skip
    """Create the object (`create` holds its every field) or write the `values` that differ, saying each."""
    if existing is None:
        if not dry:
            model.objects.create(**create)
        return "created"
    differ = {k: v for k, v in values.items() if getattr(existing, k) != v}
    for k, v in differ.items():
        changes.append(f"{k}: changed" if k in secret else f"{k}: {_shown(getattr(existing, k))} -> {_shown(v)}")
    if not differ:
        return "unchanged"
    if not dry:
        for k, v in differ.items():
            setattr(existing, k, v)
        existing.save(update_fields=None if model is Channel else list(differ))
    return "changed"


def _plan_item(plan: Plan, kind: str, name: str, write: Callable[[bool, list[str]], str]) -> None:
    planned = Planned(kind, name, lambda dry: "")
    planned.write = lambda dry, p=planned: write(dry, p.changes)
    plan.items.append(planned)


def _server_of(origin: tuple[str, str, int] | None) -> Server | None:
    if origin is None:
        return None
    return Server.objects.filter(scheme=origin[0], host=origin[1], port=origin[2]).first()


def _server_ref(value: object, servers_in_file: dict) -> tuple[str, str, int] | None:
    origin = _origin(value)
    if origin is None:
        return None
    if origin in servers_in_file.values() or _server_of(origin) is not None:
        return origin
    return None


def _target(item: dict, where: _Where, servers_in_file: dict, what: str) -> tuple | None:
    """(origin or None, group) of an object that is for one server or one group; None with a problem."""
    group = item.get("group") or ""
    if not isinstance(group, str):
        where.problem("group", "must be text")
        return None
    origin = None
    if item.get("server") is not None:
        origin = _server_ref(item["server"], servers_in_file)
        if origin is None:
            where.problem("server", "must be a server that exists or that this file names")
            return None
    if bool(origin) == bool(group):
        where.problem("group" if group else "server", f"a {what} is for one server or one group")
        return None
    return origin, group


def _target_name(origin: tuple | None, group: str) -> str:
    return ServerKey(*origin).origin() if origin else f"group {group}"


def _group_of(origin: tuple | None, group: str, servers_in_file: dict) -> str:
    """The server group an object for a server or a group reaches (a server the file makes: no group yet)."""
    if origin is None:
        return group
    server = _server_of(origin)
    return server.group if server is not None else ""
