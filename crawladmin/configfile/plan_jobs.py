"""Planning the file's crawl jobs: checked by the job rules the admin uses (crawler.jobrules) rather than a
model's clean(), written through the jobs service (crawlcore.services.job_definitions), and held to the role
rules of the job's group and of the servers its seeds make the crawl fetch from."""

from __future__ import annotations

from crawladmin.configfile.plan import Plan, _plan_item, _shown, _Where
from crawlcore import roles
from crawlcore.models import Job
from crawlcore.selectors_jobs import job_definition
from crawlcore.services.job_definitions import job_save
from crawler.jobrules import job_spec_check


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
