"""Configuration as code: servers, monitors of every kind, alert channels and their rules, recurring
maintenance, mutes, status pages and crawl jobs from one YAML file (`manage.py apply`), and the current
configuration in the same form (`manage.py export_config`). The form of each object is its serializer's
(crawladmin.serializers), the one the REST API answers with; the API's writes go through the plan here.

The whole file is read and checked before anything is written: a problem anywhere is reported with its line
and nothing changes. Then one transaction writes what differs, and each object is reported as `created`,
`changed` (with each `field: old -> new`), `unchanged` or (with prune) `removed`, so a second apply of the
same file changes nothing. A key the file leaves out keeps the object's value (a new object: the default).

Each object is checked by the same rules as the admin's forms (the models' clean(), crawler.jobrules for
jobs). Servers are the crawl's data as much as configuration (the crawl finds most of them): prune never
removes a server; it removes the other objects of the sections the file has that it no longer names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

import yaml
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from alerts.models import Channel, MaintenanceSchedule, Mute, Rule
from crawlcore import roles
from crawlcore.models import Job, Server
from crawlcore.selectors_jobs import job_definition
from crawlcore.services.job_definitions import job_delete, job_save
from crawlcore.validate import MONITOR_SCHEMES
from crawler.jobrules import job_spec_check
from crawler.urlnorm import ServerKey, UrlError, canonicalize, server_key
from dashboard.models import StatusPage
from monitoring.kinds import SCHEMES, Kind
from monitoring.kinds.dns import DnsSpecError, expected_parse, nameserver_parse, record_type_check
from monitoring.kinds.heartbeat import check_interval, token_new
from monitoring.models import ServerMonitor
from monitoring.server_list import MIN_INTERVAL_S

SECTIONS = ("servers", "monitors", "channels", "maintenance", "mutes", "status_pages", "jobs")
MAX_BYTES = 5 * 1024 * 1024
MAX_NODES = 200_000

SERVER_KEYS = ("url", "group", "enabled", "crawler_num", "trusted", "owner_name", "owner_email", "min_delay",
               "max_concurrency")  # fmt: skip
# Who may set what on a server: these only a superuser (the shell is one; crawlcore.access's rule, the
# address being the one key `url` here).
SUPERUSER_SERVER_KEYS = ("url", "trusted", "owner_email")
MONITOR_KEYS = ("server", "kind", "name", "enabled", "health_url", "interval_s", "delay_threshold_s",
                "accepted_codes", "fail_after", "recover_after", "locations", "content_must", "content_must_not",
                "content_regex", "content_rendered", "quorum", "assertions", "sla_target", "tcp_tls", "tcp_banner",
                "dns_record_type", "dns_expected", "dns_server", "period_s", "grace_s")  # fmt: skip
CHANNEL_KEYS = ("name", "url", "enabled", "owner_of", "rules")
RULE_KEYS = ("kinds", "group", "server")
MAINTENANCE_KEYS = ("server", "group", "schedule", "time_zone", "duration_minutes", "reason", "enabled")
MUTE_KEYS = ("server", "group", "until", "reason")
STATUS_PAGE_KEYS = ("slug", "group", "title", "enabled", "show_addresses")
# The fields of each kind: a monitor of one kind leaves the others' at their defaults.
KIND_FIELDS = {
    Kind.HTTP.value: ("health_url", "accepted_codes", "content_must", "content_must_not", "content_regex",
                      "assertions"),
    Kind.TCP.value: ("tcp_tls", "tcp_banner"),
    Kind.DNS.value: ("dns_record_type", "dns_expected", "dns_server"),
    Kind.HEARTBEAT.value: ("period_s", "grace_s"),
}  # fmt: skip
KIND_OF_SCHEME = {"http": Kind.HTTP.value, "https": Kind.HTTP.value, **{v: k.value for k, v in SCHEMES.items()}}
DEFAULT_PORTS = {"dns": 53, "heartbeat": 0}


class ConfigError(Exception):
    """The file cannot be applied: `problems` are one line each, `FILE:LINE: where: what`."""

    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = problems


# -- reading, with lines -----------------------------------------------------------------------------------
def _plain(node: yaml.Node, path: tuple, lines: dict[tuple, int], loader: yaml.SafeLoader, budget: list[int]):
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigError([f"{node.start_mark.line + 1}: more than {MAX_NODES} values (aliases expanded)"])
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool) or key is None:
                raise ConfigError([f"{key_node.start_mark.line + 1}: a key must be plain text"])
            if key in out:
                raise ConfigError([f"{key_node.start_mark.line + 1}: {key!r} given twice"])
            out[key] = _plain(value_node, (*path, key), lines, loader, budget)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v, (*path, i), lines, loader, budget) for i, v in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def config_read(text: str) -> tuple[dict, dict[tuple, int]]:
    """The document and the line of each path in it. Raises ConfigError (lines without the file name)."""
    if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise ConfigError([f"1: larger than {MAX_BYTES} bytes"])
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[tuple, int] = {}
        data = {} if node is None else _plain(node, (), lines, loader, [MAX_NODES])
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise ConfigError([f"{line}: not valid YAML ({exc.problem or exc.context})"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"1: not valid YAML ({exc})"]) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError([f"1: the file must be a mapping of {', '.join(SECTIONS)}"])
    return data, lines


# -- checking ---------------------------------------------------------------------------------------------
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


SERVER_FIELDS = tuple(k for k in SERVER_KEYS if k != "url")


def _plan_servers(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    for i, item in enumerate(items):
        where = _Where(lines, ("servers", i), f"servers[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with at least url")
            continue
        _unknown(item, SERVER_KEYS, where)
        origin = _origin(item.get("url"))
        if origin is None:
            where.problem("url", "required: the server's URL, e.g. https://www.example.org or tcp://db.example.org:5432")
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


def _server_ref(value: object, servers_in_file: dict) -> tuple[str, str, int] | None:
    origin = _origin(value)
    if origin is None:
        return None
    if origin in servers_in_file.values() or _server_of(origin) is not None:
        return origin
    return None


MONITOR_FIELDS = tuple(k for k in MONITOR_KEYS if k not in ("server", "kind"))


def _kind_problems(m: ServerMonitor) -> dict[str, str]:
    """What the kind's own checks refuse (the ones add_monitor makes), after the model's clean()."""
    out: dict[str, str] = {}
    if m.kind == Kind.DNS.value:
        try:
            m.dns_record_type = record_type_check(m.dns_record_type)
            m.dns_expected = ", ".join(sorted(expected_parse(m.dns_expected)))
            nameserver_parse(m.dns_server)
        except DnsSpecError as exc:
            out["dns_record_type"] = str(exc)
    if m.kind == Kind.HEARTBEAT.value:
        if m.period_s is None:
            m.period_s = 86400.0
        if m.period_s <= 0 or (m.grace_s is not None and m.grace_s <= 0):
            out["period_s"] = "period and grace are positive seconds"
        elif m.grace_s is None:
            m.grace_s = m.period_s
        if m.interval_s is None and not out:
            m.interval_s = max(MIN_INTERVAL_S, check_interval(m.period_s, m.grace_s))
    for other, names in KIND_FIELDS.items():
        for name in names if other != m.kind else ():
            if getattr(m, name) != ServerMonitor._meta.get_field(name).get_default():
                out[name] = f"a field of {other} monitors, not of a {m.kind} monitor"
    return out


def _plan_monitors(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    seen: set = set()
    for i, item in enumerate(items):
        where = _Where(lines, ("monitors", i), f"monitors[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with at least server")
            continue
        _unknown(item, MONITOR_KEYS, where)
        origin = _origin(item.get("server"))
        if origin is not None and origin[0] in ("http", "https"):
            origin = _server_ref(item.get("server"), servers_in_file)
        if origin is None:
            where.problem("server", "required: the URL of a server that exists or that this file names "
                          "(tcp://host:port, dns://name and heartbeat://slug are made when missing)")  # fmt: skip
            continue
        kind = item.get("kind") or KIND_OF_SCHEME[origin[0]]
        if kind != KIND_OF_SCHEME[origin[0]]:
            where.problem("kind", f"a {origin[0]}:// server is watched by a {KIND_OF_SCHEME[origin[0]]} monitor")
            continue
        if origin in seen:
            where.problem("server", "a server has one monitor: named twice")
            continue
        seen.add(origin)
        server = _server_of(origin)
        existing = ServerMonitor.objects.filter(server=server).first() if server is not None else None
        if existing is not None and existing.kind != kind:
            where.problem("kind", f"this server has a {existing.kind} monitor; remove it first")
            continue
        group = server.group if server is not None else ""
        if not where.allowed("update" if existing else "create", "monitor", group=group, key="server"):
            continue
        reason = roles.fields_refusal(where.plan.actor, "monitor", {k: item[k] for k in ("dns_server",) if k in item},
                                      None if existing is None else {"dns_server": existing.dns_server})  # fmt: skip
        if reason is not None:
            where.refuse("dns_server", reason)
            continue
        monitor = ServerMonitor(kind=kind, **_start(ServerMonitor, existing, MONITOR_FIELDS, item))
        if server is not None:  # the save-time trust check of the health URL runs, as the admin's
            monitor.server = server
        if not _cleaned(monitor, where, exclude=["server"]):
            continue
        problems = _kind_problems(monitor)
        for key, message in problems.items():
            where.problem(key, message)
        if problems:
            continue
        name = ServerKey(*origin).origin()
        given = {k: getattr(monitor, k) for k in MONITOR_FIELDS if k in item}
        create = {"kind": kind, **{k: getattr(monitor, k) for k in MONITOR_FIELDS}}

        def write(dry: bool, changes: list[str], origin=origin, given=given, create=create) -> str:
            server = _server_of(origin)
            existing = ServerMonitor.objects.filter(server=server).first() if server is not None else None
            if existing is None and not dry:
                if server is None:
                    server = Server.objects.create(scheme=origin[0], host=origin[1], port=origin[2])
                extra = {"ping_token": token_new()} if create["kind"] == Kind.HEARTBEAT.value else {}
                create = {**create, "server": server, **extra}
            return _upsert(ServerMonitor, existing, given, create, dry, changes)

        _plan_item(plan, "monitor", name, write)


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


def _rules_of(item: dict, where: _Where, servers_in_file: dict) -> list[tuple] | None:
    raw = item.get("rules", [])
    if not isinstance(raw, list):
        where.problem("rules", "must be a list of {kinds, group, server}")
        return None
    out = []
    for j, r in enumerate(raw):
        if not isinstance(r, dict) or any(k not in RULE_KEYS for k in r):
            where.problem("rules", f"rule {j}: a mapping of {', '.join(RULE_KEYS)}")
            return None
        origin = None
        if r.get("server") is not None:
            origin = _server_ref(r["server"], servers_in_file)
            if origin is None:
                where.problem("rules", f"rule {j}: server must be a server that exists or that this file names")
                return None
        rule = Rule(kinds=r.get("kinds", Rule._meta.get_field("kinds").default), group=r.get("group") or "")
        if not isinstance(rule.kinds, str) or not isinstance(rule.group, str):
            where.problem("rules", f"rule {j}: kinds and group are text")
            return None
        try:
            rule.clean()
        except ValidationError as exc:
            where.problem("rules", f"rule {j}: " + "; ".join(m for _, m in _validation_messages(exc)))
            return None
        if rule.group and origin:
            where.problem("rules", f"rule {j}: a rule is for a group or for one server, not both")
            return None
        out.append((rule.kinds, rule.group, origin))
    return sorted(out, key=repr)


def _current_rules(channel: Channel) -> list[tuple]:
    return sorted(
        ((r.kinds, r.group, (r.server.scheme, r.server.host, r.server.port) if r.server_id else None)
         for r in channel.rules.select_related("server")),
        key=repr,
    )  # fmt: skip


CHANNEL_FIELDS = ("url", "enabled", "owner_of")


def _plan_channels(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = _Where(lines, ("channels", i), f"channels[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with at least name and url")
            continue
        _unknown(item, CHANNEL_KEYS, where)
        name = item.get("name")
        existing = Channel.objects.filter(name=name).first() if isinstance(name, str) else None
        if not where.allowed("update" if existing else "create", "channel", group=None, key="name"):
            continue
        channel = Channel(name=name if isinstance(name, str) else "", **_start(Channel, existing, CHANNEL_FIELDS, item))
        if not _cleaned(channel, where):
            continue
        if channel.name in seen:
            where.problem("name", f"{channel.name!r} is named twice")
            continue
        seen.add(channel.name)
        rules = _rules_of(item, where, servers_in_file) if "rules" in item else None
        if "rules" in item and rules is None:
            continue
        given = {k: getattr(channel, k) for k in CHANNEL_FIELDS if k in item}
        create = {"name": channel.name, **{k: getattr(channel, k) for k in CHANNEL_FIELDS}}

        def write(dry: bool, changes: list[str], given=given, create=create, rules=rules) -> str:
            existing = Channel.objects.filter(name=create["name"]).first()
            outcome = _upsert(Channel, existing, given, create, dry, changes, secret=("url",))
            if rules is None or (existing is not None and _current_rules(existing) == rules):
                return outcome
            if existing is not None:
                changes.append(f"rules: {len(_current_rules(existing))} -> {len(rules)} rule(s), changed")
            if not dry:
                channel = Channel.objects.get(name=create["name"])
                channel.rules.all().delete()
                for kinds, group, origin in rules:
                    Rule.objects.create(channel=channel, kinds=kinds, group=group, server=_server_of(origin))
            return "created" if existing is None else "changed"

        _plan_item(plan, "channel", channel.name, write)


def _target_name(origin: tuple | None, group: str) -> str:
    return ServerKey(*origin).origin() if origin else f"group {group}"


MAINTENANCE_FIELDS = ("duration_minutes", "reason", "enabled")


def _plan_maintenance(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    seen: set = set()
    for i, item in enumerate(items):
        where = _Where(lines, ("maintenance", i), f"maintenance[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with schedule, duration_minutes and server or group")
            continue
        _unknown(item, MAINTENANCE_KEYS, where)
        if item.get("time_zone", "UTC") != "UTC":
            where.problem("time_zone", "maintenance schedules are read in UTC")
            continue
        target = _target(item, where, servers_in_file, "maintenance schedule")
        if target is None:
            continue
        origin, group = target
        schedule = item.get("schedule")
        if not isinstance(schedule, str):
            where.problem("schedule", "required: a 5-field cron expression (UTC) or a weekly time like 'sun 02:00'")
            continue
        key = (origin, group, schedule)
        if key in seen:
            where.problem("schedule", "named twice for the same server or group")
            continue
        seen.add(key)
        existing = _maintenance_of(origin, group, schedule)
        if not where.allowed("update" if existing else "create", "maintenance", group=_group_of(origin, group,
                             servers_in_file), key="server" if origin else "group"):  # fmt: skip
            continue
        sched = MaintenanceSchedule(group=group, schedule=schedule,
                                    **_start(MaintenanceSchedule, existing, MAINTENANCE_FIELDS, item))  # fmt: skip
        # clean() asks only whether it has a server (the row may be made by this file): a stand-in id.
        sched.server_id = -1 if origin else None
        if not _cleaned(sched, where, exclude=["server"]):
            continue
        given = {k: getattr(sched, k) for k in MAINTENANCE_FIELDS if k in item}
        create = {"group": group, "schedule": schedule, **{k: getattr(sched, k) for k in MAINTENANCE_FIELDS}}

        def write(dry: bool, changes: list[str], origin=origin, given=given, create=create) -> str:
            existing = _maintenance_of(origin, create["group"], create["schedule"])
            create = {**create, "server": _server_of(origin)}
            return _upsert(MaintenanceSchedule, existing, given, create, dry, changes)

        _plan_item(plan, "maintenance", f"{_target_name(origin, group)} {schedule}", write)


def _maintenance_of(origin: tuple | None, group: str, schedule: str) -> MaintenanceSchedule | None:
    if origin is not None:
        server = _server_of(origin)
        if server is None:
            return None
        return MaintenanceSchedule.objects.filter(server=server, schedule=schedule).first()
    return MaintenanceSchedule.objects.filter(server__isnull=True, group=group, schedule=schedule).first()


def _when(value: object) -> datetime | None:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value
    return None


def _mute_of(origin: tuple | None, group: str, now: datetime) -> Mute | None:
    running = Mute.objects.filter(until__gt=now).order_by("-until")
    if origin is not None:
        server = _server_of(origin)
        return running.filter(server=server).first() if server is not None else None
    return running.filter(server__isnull=True, group=group).first()


def _plan_mutes(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    seen: set = set()
    now = timezone.now()
    for i, item in enumerate(items):
        where = _Where(lines, ("mutes", i), f"mutes[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with until and server or group")
            continue
        _unknown(item, MUTE_KEYS, where)
        target = _target(item, where, servers_in_file, "mute")
        if target is None:
            continue
        origin, group = target
        until = _when(item.get("until"))
        if until is None:
            where.problem("until", "required: a time with its zone, e.g. 2030-01-01T00:00:00+00:00")
            continue
        reason = item.get("reason", "")
        if not isinstance(reason, str) or len(reason) > 200:
            where.problem("reason", "text of at most 200 characters")
            continue
        if (origin, group) in seen:
            where.problem("server" if origin else "group", "muted twice")
            continue
        if not where.allowed("create", "mute", group=_group_of(origin, group, servers_in_file),
                             key="server" if origin else "group"):  # fmt: skip
            continue
        seen.add((origin, group))

        def write(dry: bool, changes: list[str], origin=origin, group=group, until=until, reason=reason) -> str:
            existing = _mute_of(origin, group, now)
            given = {"until": until, "reason": reason}
            return _upsert(Mute, existing, given, {**given, "group": group, "server": _server_of(origin)}, dry, changes)

        _plan_item(plan, "mute", _target_name(origin, group), write)


STATUS_PAGE_FIELDS = ("group", "title", "enabled", "show_addresses")


def _plan_status_pages(items: list, lines, plan: Plan) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = _Where(lines, ("status_pages", i), f"status_pages[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with slug and group")
            continue
        _unknown(item, STATUS_PAGE_KEYS, where)
        slug = item.get("slug")
        existing = StatusPage.objects.filter(slug=slug).first() if isinstance(slug, str) else None
        group = existing.group if existing else str(item.get("group") or "")
        if not where.allowed("update" if existing else "create", "status_page", group=group, key="slug"):
            continue
        page = StatusPage(slug=slug if isinstance(slug, str) else "",
                          **_start(StatusPage, existing, STATUS_PAGE_FIELDS, item))  # fmt: skip
        if not _cleaned(page, where):
            continue
        if page.slug in seen:
            where.problem("slug", f"{page.slug!r} is named twice")
            continue
        seen.add(page.slug)
        given = {k: getattr(page, k) for k in STATUS_PAGE_FIELDS if k in item}
        create = {"slug": page.slug, **{k: getattr(page, k) for k in STATUS_PAGE_FIELDS}}

        def write(dry: bool, changes: list[str], given=given, create=create) -> str:
            existing = StatusPage.objects.filter(slug=create["slug"]).first()
            return _upsert(StatusPage, existing, given, create, dry, changes)

        _plan_item(plan, "status_page", page.slug, write)


def _plan_jobs(items: list, lines, plan: Plan) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = _Where(lines, ("jobs", i), f"jobs[{i}]", plan)
        existing = Job.objects.filter(name=item.get("name")).first() if isinstance(item, dict) else None
        if existing is not None and isinstance(item.get("name"), str):
            item = {**job_definition(existing), **item}  # a key left out keeps the job's value
        spec, problems = job_spec_check(item)
        for key, message in problems.items():
            where.problem(key, message)
        if problems:
            continue
        if spec["name"] in seen:
            where.problem("name", f"{spec['name']!r} is named twice")
            continue
        seen.add(spec["name"])
        if not _job_allowed(where, spec):
            continue

        def write(dry: bool, changes: list[str], spec=spec) -> str:
            job = Job.objects.filter(name=spec["name"]).first()
            if job is not None:
                changes += [f"{k}: {_shown(getattr(job, k))} -> {_shown(v)}" for k, v in spec.items()
                            if getattr(job, k) != v]  # fmt: skip
            return job_save(spec=spec, dry_run=dry)[0]

        _plan_item(plan, "job", spec["name"], write)


def _group_of(origin: tuple | None, group: str, servers_in_file: dict) -> str:
    """The server group an object for a server or a group reaches (a server the file makes: no group yet)."""
    if origin is None:
        return group
    server = _server_of(origin)
    return server.group if server is not None else ""


def _job_allowed(where: _Where, spec: dict) -> bool:
    """The actor's role rules for this job: its group (as it is and as it will be), and its seeds on servers
    the actor may make the crawl fetch from (a job reaches other groups' servers through its seeds)."""
    existing = Job.objects.filter(name=spec["name"]).first()
    if existing is not None and not where.allowed("update", "job", group=existing.group, key="name"):
        return False
    if not where.allowed("update" if existing else "create", "job", group=spec.get("group", ""), key="group"):
        return False
    reason = roles.seeds_refusal(where.plan.actor, spec.get("seeds") or [])
    if reason is not None:
        where.refuse("seeds", reason)
        return False
    return True


def _plan_prune(data: dict, plan: Plan) -> None:
    named = {(p.kind, p.name) for p in plan.items}

    def gone(kind: str, name: str, remove: Callable[[], object], group: str | None = None) -> None:
        if (kind, name) in named:
            return
        reason = roles.refusal(plan.actor, "delete", kind, group=group)
        if reason is not None:
            plan.problems.append(f"1: prune: {kind} {name}: not allowed: {reason}")
            plan.refused = plan.refused or reason
            return
        plan.items.append(Planned(kind, name, _remover(remove)))

    if "monitors" in data:
        for m in ServerMonitor.objects.select_related("server"):
            gone("monitor", m.server.origin, m.delete, m.server.group)
    if "channels" in data:
        for c in Channel.objects.all():
            gone("channel", c.name, c.delete)
    if "maintenance" in data:
        for s in MaintenanceSchedule.objects.select_related("server"):
            origin = (s.server.scheme, s.server.host, s.server.port) if s.server_id else None
            gone("maintenance", f"{_target_name(origin, s.group)} {s.schedule}", s.delete,
                 s.server.group if s.server_id else s.group)
    if "mutes" in data:
        for mute in Mute.objects.filter(until__gt=timezone.now()).select_related("server"):
            origin = (mute.server.scheme, mute.server.host, mute.server.port) if mute.server_id else None
            gone("mute", _target_name(origin, mute.group), mute.delete,
                 mute.server.group if mute.server_id else mute.group)
    if "status_pages" in data:
        for page in StatusPage.objects.all():
            gone("status_page", page.slug, page.delete, page.group)
    if "jobs" in data:
        for name, group in Job.objects.values_list("name", "group"):
            gone("job", name, lambda name=name: job_delete(name=name), group)


def _remover(fn: Callable[[], object]) -> Callable[[bool], str]:
    def write(dry: bool) -> str:
        if not dry:
            fn()
        return "removed"

    return write


def config_plan(data: dict, lines: dict[tuple, int], *, prune: bool = False, actor=None) -> Plan:
    """Check the whole document; the writes it asks for, or its problems ("LINE: where: what"). `actor`: the
    user it is applied for (the API's), held to the role rules (crawlcore.roles); None: the shell."""
    plan = Plan(actor=actor)
    for key in data:
        if key not in SECTIONS:
            plan.problems.append(f"{lines.get((key,), 1)}: {key}: unknown section (known: {', '.join(SECTIONS)})")
    sections = {}
    for key in SECTIONS:
        value = data.get(key)
        if value is None:
            value = []
        if not isinstance(value, list):
            plan.problems.append(f"{lines.get((key,), 1)}: {key}: must be a list")
            value = []
        sections[key] = value
    servers_in_file: dict[str, tuple] = {}
    _plan_servers(sections["servers"], lines, plan, servers_in_file)
    _plan_monitors(sections["monitors"], lines, plan, servers_in_file)
    # A monitor's tcp://, dns:// or heartbeat:// row is made by its entry: later sections may name it.
    for p in plan.items:
        if p.kind == "monitor":
            servers_in_file.setdefault(p.name, _origin(p.name))
    _plan_channels(sections["channels"], lines, plan, servers_in_file)
    _plan_maintenance(sections["maintenance"], lines, plan, servers_in_file)
    _plan_mutes(sections["mutes"], lines, plan, servers_in_file)
    _plan_status_pages(sections["status_pages"], lines, plan)
    _plan_jobs(sections["jobs"], lines, plan)
    if prune and not plan.problems:
        _plan_prune(data, plan)
    return plan


class Outcome(tuple):
    """(outcome, kind, name): created | changed | unchanged | removed, and `changes`, the "field: old -> new"
    lines of a changed object."""

    changes: tuple[str, ...]

    def __new__(cls, outcome: str, kind: str, name: str, changes: tuple[str, ...] = ()):
        self = super().__new__(cls, (outcome, kind, name))
        self.changes = changes
        return self

    outcome = property(lambda self: self[0])
    kind = property(lambda self: self[1])
    name = property(lambda self: self[2])


def config_apply(text: str, *, dry_run: bool = False, prune: bool = False, actor=None) -> list[Outcome]:
    """Apply a YAML document: an Outcome per object, in the file's order, removals last. Raises ConfigError
    with every problem found (nothing written). A dry run computes the same outcomes and writes nothing.
    `actor`: the user it is applied for, held to the role rules; None: the shell (a superuser)."""
    data, lines = config_read(text)
    plan = config_plan(data, lines, prune=prune, actor=actor)
    if plan.problems:
        raise ConfigError(plan.problems)
    out = []
    with transaction.atomic():
        for item in plan.items:
            outcome = item.write(dry_run)
            out.append(Outcome(outcome, item.kind, item.name, tuple(item.changes)))
    return out


# -- export ----------------------------------------------------------------------------------------------
def _without_defaults(model: type[Model], form: dict, keep: tuple[str, ...]) -> dict:
    """The form's keys whose value is not the field's default (the file is shorter; apply fills them in)."""
    out = {}
    for k, v in form.items():
        try:
            default = model._meta.get_field(k).get_default()
        except Exception:  # noqa: BLE001 - a key of the form that is not a field (url, server): always kept
            default = object()
        if k in keep or v != default:
            out[k] = v
    return out


def _key(s: Server) -> tuple:
    return (s.scheme, s.host, s.port)


def config_export(*, include_servers: str = "configured") -> dict:
    """The current configuration in the form apply reads (each object's form: crawladmin.serializers, less
    what the file does not carry). Servers: those an operator configured (trusted, grouped, owned, pinned,
    with a politeness of their own or a monitor) unless `include_servers` is "all"."""
    from .serializers import MaintenanceSerializer, MonitorSerializer, MuteSerializer, ServerSerializer

    out_servers = []
    for s in sorted(Server.objects.select_related("monitor"), key=_key):
        form = ServerSerializer(s).data
        values = _without_defaults(Server, {k: form[k] for k in SERVER_KEYS}, ("url",))
        if include_servers == "all" or len(values) > 1 or hasattr(s, "monitor"):
            out_servers.append(values)
    monitors = []
    for m in sorted(ServerMonitor.objects.select_related("server"), key=lambda m: _key(m.server)):
        form = MonitorSerializer(m, context={"shown": {}}).data
        monitors.append(_without_defaults(ServerMonitor, {k: form[k] for k in MONITOR_KEYS}, ("server", "kind")))
    channels = []
    for c in Channel.objects.order_by("name"):
        entry = _without_defaults(Channel, {"name": c.name, "url": c.url, "enabled": c.enabled,
                                            "owner_of": c.owner_of}, ("name", "url"))  # fmt: skip
        rules = []
        for kinds, group, origin in _current_rules(c):
            rule: dict = {"kinds": kinds}
            if group:
                rule["group"] = group
            if origin:
                rule["server"] = ServerKey(*origin).origin()
            rules.append(rule)
        if rules:
            entry["rules"] = rules
        channels.append(entry)
    maintenance = []
    for sched in MaintenanceSchedule.objects.select_related("server"):
        form = MaintenanceSerializer(sched).data
        entry = {k: form[k] for k in MAINTENANCE_KEYS if form.get(k) not in (None, "")}
        maintenance.append(_without_defaults(MaintenanceSchedule, entry, ("schedule", "duration_minutes")))
    maintenance.sort(key=lambda e: (e.get("server") or "", e.get("group") or "", e["schedule"]))
    mutes = []
    for mute in Mute.objects.filter(until__gt=timezone.now()).select_related("server").order_by("until"):
        form = MuteSerializer(mute).data
        mutes.append({k: form[k] for k in MUTE_KEYS if form.get(k) not in (None, "")})
    mutes = list({(m.get("server"), m.get("group")): m for m in mutes}.values())  # the latest of each target
    mutes.sort(key=lambda e: (e.get("server") or "", e.get("group") or ""))
    pages = [
        _without_defaults(StatusPage, {k: getattr(p, k) for k in STATUS_PAGE_KEYS}, ("slug", "group"))
        for p in StatusPage.objects.order_by("slug")
    ]
    jobs = []
    for job in Job.objects.order_by("name"):
        d = job_definition(job)
        jobs.append({k: v for k, v in d.items() if v not in (None, "", []) or k in ("name", "seeds", "enabled")})
    out = {"servers": out_servers, "monitors": monitors, "channels": channels, "maintenance": maintenance,
           "mutes": mutes, "status_pages": pages, "jobs": jobs}  # fmt: skip
    return out


def config_export_yaml(**kwargs) -> str:
    return yaml.safe_dump(config_export(**kwargs), sort_keys=False, allow_unicode=True)


def reference_sections() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The file's sections and the keys an entry of each may have, as read above: the generated configuration
    reference (crawladmin.reference) lists these."""
    from crawler.jobrules import JOB_KEYS

    return (("servers", SERVER_KEYS), ("monitors", MONITOR_KEYS), ("channels", CHANNEL_KEYS),
            ("channels: rules", RULE_KEYS), ("jobs", JOB_KEYS))  # fmt: skip
