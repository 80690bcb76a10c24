"""Configuration as code: servers, monitors, alert channels and crawl jobs from one YAML file (`manage.py
apply`), and the current configuration in the same form (`manage.py export_config`).

The whole file is read and checked before anything is written: a problem anywhere is reported with its line
and nothing changes. Then one transaction writes what differs, and each object is reported as `created`,
`changed`, `unchanged` or (with prune) `removed`, so a second apply of the same file changes nothing.

Each object is checked by the same rules as the admin's forms (the models' clean(), crawler.jobrules for
jobs). Servers are the crawl's data as much as configuration (the crawl finds most of them): prune never
removes a server; it removes monitors, channels and jobs the file no longer names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import yaml
from django.core.exceptions import ValidationError
from django.db import transaction

from alerts.models import Channel, Rule
from crawlcore import roles
from crawlcore.models import Job, Server
from crawlcore.selectors_jobs import job_definition
from crawlcore.services.jobs import job_delete, job_save
from crawler.jobrules import job_spec_check
from crawler.urlnorm import ServerKey, UrlError, canonicalize, server_key
from monitoring.models import ServerMonitor

SECTIONS = ("servers", "monitors", "channels", "jobs")
KIND = {"servers": "server", "monitors": "monitor", "channels": "channel", "jobs": "job"}
MAX_BYTES = 5 * 1024 * 1024
MAX_NODES = 200_000

SERVER_KEYS = ("url", "group", "enabled", "crawler_num", "trusted", "owner_name", "owner_email", "min_delay",
               "max_concurrency")  # fmt: skip
# Who may set what on a server: these only a superuser (the shell is one; crawlcore.access's rule, the
# address being the one key `url` here).
SUPERUSER_SERVER_KEYS = ("url", "trusted", "owner_email")
MONITOR_KEYS = ("server", "kind", "enabled", "health_url", "interval_s", "delay_threshold_s", "accepted_codes",
                "fail_after", "recover_after", "locations", "content_must", "content_must_not", "content_regex",
                "content_rendered", "quorum")  # fmt: skip
CHANNEL_KEYS = ("name", "url", "enabled", "owner_of", "rules")
RULE_KEYS = ("kinds", "group", "server")


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
        raise ConfigError(["1: the file must be a mapping of servers, monitors, channels and jobs"])
    return data, lines


# -- checking ---------------------------------------------------------------------------------------------
@dataclass
class Planned:
    kind: str
    name: str
    write: Callable[[bool], str]  # write(dry_run) -> created | changed | unchanged | removed


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


def _with_defaults(model, item: dict, keys: tuple[str, ...], skip: tuple[str, ...]) -> dict:
    """The file is the whole truth of what it names: a key left out takes the field's default."""
    return {k: item[k] if k in item else model._meta.get_field(k).get_default() for k in keys if k not in skip}


def _unknown(item: dict, known: tuple[str, ...], where: _Where) -> None:
    for key in item:
        if key not in known:
            where.problem(str(key), f"unknown key (known: {', '.join(known)})")


def _origin(url: object) -> tuple[str, str, int] | None:
    if not isinstance(url, str):
        return None
    try:
        key = server_key(canonicalize(url))
    except UrlError:
        return None
    return key.scheme, key.host, key.port


def _fields_equal(obj, values: dict) -> bool:
    return all(getattr(obj, k) == v for k, v in values.items())


def _plan_servers(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    for i, item in enumerate(items):
        where = _Where(lines, ("servers", i), f"servers[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with at least url")
            continue
        _unknown(item, SERVER_KEYS, where)
        origin = _origin(item.get("url"))
        if origin is None:
            where.problem("url", "required: the server's http(s) URL, e.g. https://www.example.org")
            continue
        scheme, host, port = origin
        values = _with_defaults(Server, item, SERVER_KEYS, ("url",))
        server = Server(scheme=scheme, host=host, port=port, **values)
        try:
            server.full_clean(validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            for name, message in _validation_messages(exc):
                where.problem(name, message)
            continue
        values = {k: getattr(server, k) for k in values}
        name = server.origin
        if name in servers_in_file:
            where.problem("url", f"{name} is named twice")
            continue
        servers_in_file[name] = origin
        if not _server_allowed(where, origin, values):
            continue

        def write(dry: bool, origin=origin, values=values) -> str:
            existing = Server.objects.filter(scheme=origin[0], host=origin[1], port=origin[2]).first()
            if existing is None:
                if not dry:
                    Server.objects.create(scheme=origin[0], host=origin[1], port=origin[2], **values)
                return "created"
            if _fields_equal(existing, values):
                return "unchanged"
            if not dry:
                Server.objects.filter(id=existing.id).update(**values)
            return "changed"

        plan.items.append(Planned("server", name, write))


def _server_allowed(where: _Where, origin: tuple[str, str, int], values: dict) -> bool:
    """The actor's role rules for this server: created (a superuser's), or updated within its groups (the row
    as it is and as it will be) with the superuser's fields unchanged."""
    existing = _server_of(origin)
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
    if origin in servers_in_file.values() or Server.objects.filter(
        scheme=origin[0], host=origin[1], port=origin[2]
    ).exists():
        return origin
    return None


def _server_of(origin: tuple[str, str, int]) -> Server | None:
    return Server.objects.filter(scheme=origin[0], host=origin[1], port=origin[2]).first()


def _plan_monitors(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    seen: set = set()
    for i, item in enumerate(items):
        where = _Where(lines, ("monitors", i), f"monitors[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with at least server")
            continue
        _unknown(item, MONITOR_KEYS, where)
        if item.get("kind", "http") != "http":
            where.problem("kind", "only http monitors can be written here")
        origin = _server_ref(item.get("server"), servers_in_file)
        if origin is None:
            where.problem("server", "required: the URL of a server that exists or that this file names")
            continue
        if origin in seen:
            where.problem("server", "a server has one monitor: named twice")
            continue
        seen.add(origin)
        values = _with_defaults(ServerMonitor, item, MONITOR_KEYS, ("server", "kind"))
        server = _server_of(origin)
        existing = ServerMonitor.objects.filter(server=server).first() if server is not None else None
        group = server.group if server is not None else ""
        if not where.allowed("update" if existing else "create", "monitor", group=group, key="server"):
            continue
        # With its server (when it exists): the save-time trust check of the health URL runs, as the admin's.
        monitor = ServerMonitor(server=server, **values) if server is not None else ServerMonitor(**values)
        try:
            monitor.full_clean(exclude=["server"], validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            for name, message in _validation_messages(exc):
                where.problem(name, message)
            continue
        values = {k: getattr(monitor, k) for k in values}
        name = _origin_text(origin)

        def write(dry: bool, origin=origin, values=values) -> str:
            server = _server_of(origin)
            existing = ServerMonitor.objects.filter(server=server).first() if server is not None else None
            if existing is None:
                if not dry:
                    ServerMonitor.objects.create(server=server, **values)
                return "created"
            if _fields_equal(existing, values):
                return "unchanged"
            if not dry:
                ServerMonitor.objects.filter(pk=existing.pk).update(**values)
            return "changed"

        plan.items.append(Planned("monitor", name, write))


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
        try:
            rule.clean()
        except ValidationError as exc:
            where.problem("rules", f"rule {j}: " + "; ".join(m for _, m in _validation_messages(exc)))
            return None
        if rule.group and origin:
            where.problem("rules", f"rule {j}: a rule is for a group or for one server, not both")
            return None
        out.append((rule.kinds, rule.group, origin))
    return out


def _current_rules(channel: Channel) -> list[tuple]:
    return sorted(
        (r.kinds, r.group, (r.server.scheme, r.server.host, r.server.port) if r.server_id else None)
        for r in channel.rules.select_related("server")
    )


def _plan_channels(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = _Where(lines, ("channels", i), f"channels[{i}]", plan)
        if not isinstance(item, dict):
            where.problem("", "must be a mapping with at least name and url")
            continue
        _unknown(item, CHANNEL_KEYS, where)
        exists = Channel.objects.filter(name=item.get("name")).exists() if isinstance(item.get("name"), str) else False
        if not where.allowed("update" if exists else "create", "channel", group=None, key="name"):
            continue
        values = _with_defaults(Channel, item, CHANNEL_KEYS, ("rules",))
        channel = Channel(**values)
        try:
            channel.full_clean(validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            for name, message in _validation_messages(exc):
                where.problem(name, message)
            continue
        if channel.name in seen:
            where.problem("name", f"{channel.name!r} is named twice")
            continue
        seen.add(channel.name)
        rules = _rules_of(item, where, servers_in_file)
        if rules is None:
            continue
        values = {k: getattr(channel, k) for k in values}

        def write(dry: bool, values=values, rules=sorted(rules, key=repr)) -> str:
            existing = Channel.objects.filter(name=values["name"]).first()
            if existing is not None and _fields_equal(existing, values) and _current_rules(existing) == sorted(
                rules, key=repr
            ):
                return "unchanged"
            if dry:
                return "created" if existing is None else "changed"
            if existing is None:
                existing = Channel.objects.create(**values)
                outcome = "created"
            else:
                for k, v in values.items():
                    setattr(existing, k, v)
                existing.save()
                existing.rules.all().delete()
                outcome = "changed"
            for kinds, group, origin in rules:
                Rule.objects.create(channel=existing, kinds=kinds, group=group,
                                    server=_server_of(origin) if origin else None)  # fmt: skip
            return outcome

        plan.items.append(Planned("channel", channel.name, write))


def _plan_jobs(items: list, lines, plan: Plan) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = _Where(lines, ("jobs", i), f"jobs[{i}]", plan)
        spec, problems = job_spec_check(item)
        for key, message in problems.items():
            where.problem(key, message)
        if problems:
            continue
        if not _job_allowed(where, spec):
            continue
        if spec["name"] in seen:
            where.problem("name", f"{spec['name']!r} is named twice")
            continue
        seen.add(spec["name"])
        plan.items.append(Planned("job", spec["name"], lambda dry, spec=spec: job_save(spec=spec, dry_run=dry)[0]))


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

    def remove(kind: str, name: str, group: str | None, fn: Callable[[], object]) -> None:
        reason = roles.refusal(plan.actor, "delete", kind, group=group)
        if reason is not None:
            plan.problems.append(f"1: prune: {kind} {name}: not allowed: {reason}")
            plan.refused = plan.refused or reason
            return
        plan.items.append(Planned(kind, name, _remover(fn)))

    if "monitors" in data:
        for m in ServerMonitor.objects.select_related("server"):
            if ("monitor", m.server.origin) not in named:
                remove("monitor", m.server.origin, m.server.group, lambda m=m: m.delete())
    if "channels" in data:
        for c in Channel.objects.all():
            if ("channel", c.name) not in named:
                remove("channel", c.name, None, lambda c=c: c.delete())
    if "jobs" in data:
        for name, group in Job.objects.values_list("name", "group"):
            if ("job", name) not in named:
                remove("job", name, group, lambda name=name: job_delete(name=name))


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
    _plan_channels(sections["channels"], lines, plan, servers_in_file)
    _plan_jobs(sections["jobs"], lines, plan)
    if prune and not plan.problems:
        _plan_prune(data, plan)
    return plan


def config_apply(text: str, *, dry_run: bool = False, prune: bool = False, actor=None) -> list[tuple[str, str, str]]:
    """Apply a YAML document: [(outcome, kind, name)], in the file's order, removals last. Raises ConfigError
    with every problem found (nothing written). A dry run computes the same outcomes and writes nothing.
    `actor`: the user it is applied for, held to the role rules; None: the shell (a superuser)."""
    data, lines = config_read(text)
    plan = config_plan(data, lines, prune=prune, actor=actor)
    if plan.problems:
        raise ConfigError(plan.problems)
    with transaction.atomic():
        out = [(item.write(dry_run), item.kind, item.name) for item in plan.items]
    return out


# -- export ----------------------------------------------------------------------------------------------
def config_export(*, include_servers: str = "configured") -> dict:
    """The current configuration in the form apply reads. Servers: those an operator configured (trusted,
    grouped, owned, pinned, with a politeness of their own or a monitor) unless `include_servers` is
    "all"; never the crawl's own columns."""
    servers = Server.objects.order_by("id")
    out_servers = []
    for s in servers:
        values = {
            "url": s.origin,
            "group": s.group,
            "enabled": s.enabled,
            "crawler_num": s.crawler_num,
            "trusted": s.trusted,
            "owner_name": s.owner_name,
            "owner_email": s.owner_email,
            "min_delay": s.min_delay,
            "max_concurrency": s.max_concurrency,
        }
        configured = s.trusted or s.group or s.owner_name or s.owner_email or s.crawler_num is not None
        configured = configured or s.min_delay is not None or s.max_concurrency is not None or not s.enabled
        if include_servers == "all" or configured or hasattr(s, "monitor"):
            out_servers.append({k: v for k, v in values.items() if k == "url" or v not in (None, "", False)
                                or (k == "enabled" and not v)})  # fmt: skip
    monitors = []
    for m in ServerMonitor.objects.select_related("server").order_by("server_id"):
        values = {"server": m.server.origin, **{k: getattr(m, k) for k in MONITOR_KEYS if k not in ("server", "kind")}}
        monitors.append({k: v for k, v in values.items() if v not in (None, "") or k == "server"})
    channels = []
    for c in Channel.objects.order_by("name"):
        entry = {"name": c.name, "url": c.url, "enabled": c.enabled}
        if c.owner_of:
            entry["owner_of"] = c.owner_of
        rules = []
        for kinds, group, origin in _current_rules(c):
            rule: dict = {"kinds": kinds}
            if group:
                rule["group"] = group
            if origin:
                rule["server"] = _origin_text(origin)
            rules.append(rule)
        if rules:
            entry["rules"] = rules
        channels.append(entry)
    jobs = []
    for job in Job.objects.order_by("name"):
        d = job_definition(job)
        jobs.append({k: v for k, v in d.items() if v not in (None, "", []) or k in ("name", "seeds", "enabled")})
    return {"servers": out_servers, "monitors": monitors, "channels": channels, "jobs": jobs}


def _origin_text(origin: tuple[str, str, int]) -> str:
    return ServerKey(*origin).origin()


def config_export_yaml(**kwargs) -> str:
    return yaml.safe_dump(config_export(**kwargs), sort_keys=False, allow_unicode=True)
