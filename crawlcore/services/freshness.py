"""Freshness objectives: the one place they are checked, created, changed and deleted (the YAML file, the API
and the admin all come here), and the hourly record of whether each target held.

An objective's external form (its spec) is {name, site | job, pages, target, budget}: `site` an origin
(scheme://host[:port]) of a known server, `job` a job's name. `freshness_check` says what is wrong with a
spec, one line a key; `freshness_save` writes a checked one.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from crawlcore.models import FreshnessHour, FreshnessObjective, Job, LastmodTally, Server
from crawler.urlnorm import ServerKey, UrlError, canonicalize, server_key
from scheduling.freshness import PagesError, pages_parse

KEYS = ("name", "site", "job", "pages", "target", "budget")
MAX_TARGET = 365 * 86_400
MAX_BUDGET = 10_000_000


class FreshnessError(ValueError):
    """A spec that cannot be saved: `problems` maps each key to one line."""

    def __init__(self, problems: dict[str, str]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))


def site_origin_key(value: object) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a site's origin, or None when it is not an http(s) origin."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        key = server_key(canonicalize(value.strip()))
    except (UrlError, KeyError, ValueError):
        return None
    return (key.scheme, key.host, key.port) if key.scheme in ("http", "https") else None


def _whole(value: object, key: str, top: int, problems: dict[str, str]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        problems[key] = "must be a whole number"
        return None
    if not 1 <= value <= top:
        problems[key] = f"must be from 1 to {top}"
        return None
    return value


def _scope(spec: dict, problems: dict[str, str], origins: frozenset, jobs: frozenset) -> tuple:
    """(site origin key or None, job name or None); a problem when it is not exactly one known site or job."""
    site, job = spec.get("site"), spec.get("job")
    if (site in (None, "")) == (job in (None, "")):
        problems["site"] = "an objective is for one site (an origin) or one job"
        return None, None
    if site not in (None, ""):
        origin = site_origin_key(site)
        if origin is None:
            problems["site"] = f"{site!r} is not an http(s) origin"
        elif (
            origin not in origins
            and not Server.objects.filter(scheme=origin[0], host=origin[1], port=origin[2]).exists()
        ):
            problems["site"] = f"{site!r}: no such server (add it first)"
        return origin, None
    if not isinstance(job, str) or (job not in jobs and not Job.objects.filter(name=job).exists()):
        problems["job"] = f"{job!r}: no such job"
    return None, job


def freshness_check(
    spec: object, *, origins: frozenset = frozenset(), jobs: frozenset = frozenset()
) -> tuple[dict, dict[str, str]]:
    """The checked values of a spec and its problems (key -> one line). `origins` and `jobs`: the sites and
    jobs a configuration file makes in the same apply (they need not exist yet)."""
    if not isinstance(spec, dict):
        return {}, {"": "an objective is a mapping of " + ", ".join(KEYS)}
    problems = {str(k): f"unknown key (known: {', '.join(KEYS)})" for k in spec if k not in KEYS}
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 100 or any(ord(c) < 32 for c in name):
        problems["name"] = "must be text of 1 to 100 characters"
    origin, job = _scope(spec, problems, origins, jobs)
    try:
        pages = pages_parse(spec.get("pages", "all")).text
    except PagesError as exc:
        problems["pages"] = str(exc)
        pages = None
    target = _whole(spec.get("target"), "target", MAX_TARGET, problems)
    budget = _whole(spec.get("budget"), "budget", MAX_BUDGET, problems)
    values = {"name": name, "origin": origin, "job": job, "pages": pages, "target": target, "budget": budget}
    return values, problems


def freshness_form(obj: FreshnessObjective) -> dict:
    """The objective's external form: what the YAML export, the API and `freshness_check` share."""
    form: dict = {"name": obj.name}
    if obj.site_id:
        form["site"] = obj.site.origin
    else:
        form["job"] = obj.job.name
    form.update(pages=obj.pages, target=obj.target, budget=obj.budget)
    return form


def _resolve(values: dict) -> dict:
    if values["origin"] is not None:
        scheme, host, port = values["origin"]
        site = Server.objects.get(scheme=scheme, host=host, port=port)
        return {"site": site, "job": None}
    return {"site": None, "job": Job.objects.get(name=values["job"])}


def freshness_save(
    *, spec: dict, dry_run: bool = False, origins: frozenset = frozenset(), jobs: frozenset = frozenset()
) -> tuple[str, list[str]]:
    """Create or update the objective named spec["name"]: ("created" | "changed" | "unchanged", the
    "field: old -> new" lines of a change). Raises FreshnessError (nothing written) on a bad spec."""
    values, problems = freshness_check(spec, origins=origins, jobs=jobs)
    if problems:
        raise FreshnessError(problems)
    existing = FreshnessObjective.objects.select_related("site", "job").filter(name=values["name"]).first()
    if existing is None:
        if not dry_run:
            FreshnessObjective.objects.create(name=values["name"], pages=values["pages"], target=values["target"],
                                              budget=values["budget"], **_resolve(values))  # fmt: skip
        return "created", []
    old = freshness_form(existing)
    new = {"name": values["name"], "pages": values["pages"], "target": values["target"], "budget": values["budget"]}
    if values["origin"] is not None:
        new["site"] = ServerKey(*values["origin"]).origin()
    else:
        new["job"] = values["job"]
    changes = [f"{k}: {old.get(k, '(empty)')} -> {v}" for k, v in new.items() if old.get(k) != v]
    changes += [f"{k}: {old[k]} -> (empty)" for k in ("site", "job") if k in old and k not in new]
    if not changes:
        return "unchanged", []
    if not dry_run:
        for k, v in {"pages": values["pages"], "target": values["target"], "budget": values["budget"],
                     **_resolve(values)}.items():  # fmt: skip
            setattr(existing, k, v)
        existing.full_clean()
        existing.save()
    return "changed", changes


def freshness_delete(*, name: str) -> bool:
    """Delete the objective named `name` (its hourly record goes with it); whether there was one."""
    deleted, _ = FreshnessObjective.objects.filter(name=name).delete()
    return deleted > 0


def hour_start(now: datetime) -> datetime:
    return now.replace(minute=0, second=0, microsecond=0)


def freshness_record(*, now: datetime | None = None) -> int:
    """Record this hour of every objective (p50/p95 now and whether its target holds), once an hour: a second
    call in the same hour rewrites the hour's row. How many objectives were recorded."""
    from crawlcore.selectors_freshness import objective_status

    now = now or timezone.now()
    hour = hour_start(now)
    n = 0
    for obj in FreshnessObjective.objects.select_related("site", "job"):
        status = objective_status(obj, now=now, with_hours=False)
        with transaction.atomic():
            FreshnessHour.objects.update_or_create(
                objective=obj,
                hour=hour,
                defaults={
                    "p50": status["p50_staleness_s"],
                    "p95": status["p95_staleness_s"],
                    "met": status["met"],
                    "pages": status["pages_measured"],
                },  # fmt: skip
            )
        n += 1
    FreshnessHour.objects.filter(hour__lt=hour - timedelta(days=90)).delete()
    return n


def lastmod_tally_add(*, server_id: int, announced: bool, changed: bool, could_foretell: bool = True) -> None:
    """Count one active-scan check of a page of `server_id` for its lastmod honesty: `announced` (its sitemap
    lastmod was newer than the page's previous check), `changed` (the check found a real change);
    `could_foretell`: the server's sitemaps were read since that previous check, so a change lastmod did not
    announce counts against it (otherwise the sitemap had no chance to). One upsert; nothing when there is
    nothing to count."""
    found = changed and could_foretell
    if not (announced or found):
        return
    values = {"announced": int(announced), "confirmed": int(announced and changed), "found": int(found),
              "foretold": int(found and announced)}  # fmt: skip
    increments = {k: F(k) + v for k, v in values.items()}
    if LastmodTally.objects.filter(server_id=server_id).update(**increments):
        return
    try:
        with transaction.atomic():  # two scans of one server may both find no row: one insert wins
            LastmodTally.objects.create(server_id=server_id, **values)
    except IntegrityError:
        LastmodTally.objects.filter(server_id=server_id).update(**increments)
