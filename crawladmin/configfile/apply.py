"""Applying a configuration file: every section planned in order (a later section may name what an earlier
one makes), the whole file checked before anything is written, then one transaction that writes what
differs and says, for each object, what happened to it. The REST API's writes go through config_plan too."""

from __future__ import annotations

from django.db import transaction

from crawladmin.configfile.keys import SECTIONS
from crawladmin.configfile.plan import Plan, _origin
from crawladmin.configfile.plan_channels import _plan_channels
from crawladmin.configfile.plan_freshness import _plan_freshness
from crawladmin.configfile.plan_jobs import _plan_jobs
from crawladmin.configfile.plan_maintenance import _plan_maintenance
from crawladmin.configfile.plan_monitors import _plan_monitors
from crawladmin.configfile.plan_mutes import _plan_mutes
from crawladmin.configfile.plan_servers import _plan_servers
from crawladmin.configfile.plan_status_pages import _plan_status_pages
from crawladmin.configfile.prune import _plan_prune
from crawladmin.configfile.read import ConfigError, config_read


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
    _plan_freshness(sections["freshness"], lines, plan, servers_in_file)
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
