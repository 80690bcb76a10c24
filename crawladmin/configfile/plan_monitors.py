"""Planning the file's monitors, one per server: the kind follows the server's scheme (http(s), tcp, dns,
heartbeat), each kind's own checks run after the model's (the ones add_monitor makes), and a tcp://, dns://
or heartbeat:// server is made by its monitor's entry when it does not exist yet."""

from __future__ import annotations

from crawladmin.configfile.keys import MONITOR_KEYS
from crawladmin.configfile.plan import (
    Plan,
    _cleaned,
    _entries,
    _origin,
    _plan_item,
    _server_of,
    _server_ref,
    _start,
    _upsert,
)
from crawlcore import roles
from crawlcore.models import Server
from crawler.urlnorm import ServerKey
from monitoring.kinds import SCHEMES, Kind
from monitoring.kinds.dns import DnsSpecError, expected_parse, nameserver_parse, record_type_check
from monitoring.kinds.heartbeat import check_interval, token_new
from monitoring.models import ServerMonitor
from monitoring.server_list import MIN_INTERVAL_S

# The fields of each kind: a monitor of one kind leaves the others' at their defaults.
KIND_FIELDS = {
    Kind.HTTP.value: ("health_url", "accepted_codes", "content_must", "content_must_not", "content_regex",
                      "assertions"),
    Kind.TCP.value: ("tcp_tls", "tcp_banner"),
    Kind.DNS.value: ("dns_record_type", "dns_expected", "dns_server"),
    Kind.HEARTBEAT.value: ("period_s", "grace_s"),
}  # fmt: skip
KIND_OF_SCHEME = {"http": Kind.HTTP.value, "https": Kind.HTTP.value, **{v: k.value for k, v in SCHEMES.items()}}


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
    for item, where in _entries(items, lines, plan, "monitors", MONITOR_KEYS, "must be a mapping with at least server"):
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
