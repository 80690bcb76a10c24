"""Planning the file's alert channels and their routing rules: a channel's URL is a secret (a change is said,
never shown), and its rules are replaced as a whole when they differ from the file's (a rule is for some kinds
of alert, of a group or of one server)."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from alerts.models import Channel, Rule
from crawladmin.configfile.keys import CHANNEL_KEYS, RULE_KEYS
from crawladmin.configfile.plan import (
    Plan,
    _cleaned,
    _entries,
    _plan_item,
    _server_of,
    _server_ref,
    _start,
    _upsert,
    _validation_messages,
    _Where,
)


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
    for item, where in _entries(items, lines, plan, "channels", CHANNEL_KEYS,
                                "must be a mapping with at least name and url"):  # fmt: skip
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
