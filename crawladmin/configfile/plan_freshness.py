"""Planning the file's freshness objectives: checked and written by the one freshness service
(crawlcore.services.freshness), a key left out keeping the objective's value, and held to the role rules of
crawl jobs (an objective spends requests on a site or a job: what an operator of its group may decide)."""

from __future__ import annotations

from crawladmin.configfile.keys import FRESHNESS_KEYS
from crawladmin.configfile.plan import Plan, _entries, _plan_item, _Where
from crawlcore.models import FreshnessObjective, Job
from crawlcore.services.freshness import freshness_check, freshness_form, freshness_save, site_origin_key


def _group(spec: dict) -> str:
    """The server group the objective reaches: its site's, or its job's (a site or job the file makes: none yet)."""
    from crawlcore.models import Server

    origin = site_origin_key(spec.get("site"))
    if origin is not None:
        server = Server.objects.filter(scheme=origin[0], host=origin[1], port=origin[2]).first()
        return server.group if server is not None else ""
    job = Job.objects.filter(name=spec.get("job")).first() if isinstance(spec.get("job"), str) else None
    return job.group if job is not None else ""


def _plan_freshness(items: list, lines, plan: Plan, servers_in_file: dict) -> None:
    origins = frozenset(servers_in_file.values())
    jobs = frozenset(p.name for p in plan.items if p.kind == "job")
    seen: set[str] = set()
    for item, where in _entries(items, lines, plan, "freshness", FRESHNESS_KEYS,
                                "must be a mapping with name, site or job, pages, target and budget"):  # fmt: skip
        spec = _merged(item)
        _, problems = freshness_check(spec, origins=origins, jobs=jobs)
        for key, message in problems.items():
            if key in FRESHNESS_KEYS or key == "":
                where.problem(key, message)
        if problems:
            continue
        if spec["name"] in seen:
            where.problem("name", f"{spec['name']!r} is named twice")
            continue
        seen.add(spec["name"])
        if not _allowed(where, spec):
            continue

        def write(dry: bool, changes: list[str], spec=spec) -> str:
            outcome, lines_ = freshness_save(spec=spec, dry_run=dry, origins=origins, jobs=jobs)
            changes += lines_
            return outcome

        _plan_item(plan, "freshness", spec["name"], write)


def _merged(item: dict) -> dict:
    """The entry over the objective's current form: a key the file leaves out keeps its value (a site given
    replaces the job and the other way round)."""
    name = item.get("name")
    existing = FreshnessObjective.objects.filter(name=name).first() if isinstance(name, str) else None
    if existing is None:
        return dict(item)
    current = freshness_form(existing)
    if "site" in item or "job" in item:
        current.pop("site", None)
        current.pop("job", None)
    return {**current, **item}


def _allowed(where: _Where, spec: dict) -> bool:
    existing = FreshnessObjective.objects.filter(name=spec["name"]).select_related("site", "job").first()
    if existing is not None:
        old = existing.site.group if existing.site_id else existing.job.group
        if not where.allowed("update", "job", group=old, key="name"):
            return False
    return where.allowed("update" if existing else "create", "job", group=_group(spec), key="name")
