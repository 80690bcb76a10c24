"""Benchmark: freshness objectives in the running crawler, measured against the changing web's own log.

    python -m bench.freshness_live [--seconds 240] [--pages 16] [--compare] [--json]

One crawl (the real embedded stack: SQLite, the in-process broker and worker threads running the load, extract
and scan agents, the dispatcher and the active sweep) of a changing web of three servers (testweb/changing.py)
whose sitemaps give each page's lastmod, the third's falsely ("every page changed now"):

* site 0 under an objective it can hold (a target its budget covers), site 1 under one it cannot (a target
  far beyond its small budget), site 2 (the liar) under a loose objective;
* every few seconds from MEASURE_AFTER on, each objective's reported p95 staleness (crawlcore.selectors_freshness)
  beside the true p95 from the web's log (how long each stored copy has not been the live page);
* near the end, an IndexNow push of one of site 0's pages whose stored copy is stale, timed until the page
  is fetched again;
* at the end, each objective's status, each server's lastmod honesty, and the requests each server received
  against its budget.

With `--compare`, the same crawl of the same web (same seed) again without the objectives: the true p95 of each
site and the requests it received, beside those under objectives, so what the objectives buy and cost shows.

Prints figures; asserts nothing (tests/test_freshness_live.py does, on a short run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "benchfreshnesskey01"
SAMPLE_EVERY = 3.0
DISPATCH_EVERY = 0.25
PERIOD = 2  # seconds: CRAWL_STALENESS_PERIOD, the active sweep's period
# Samples are taken from here on: every page loaded in the warm-up (all in the same seconds) has had its first
# check under its objective, and the rates and the reload lag some history. Before, the staleness of the
# holdable site climbs past its target once, while its sixteen pages, all due together, wait their turns.
MEASURE_AFTER = 90.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=240.0, help="how long the crawl runs after its warm-up")
    parser.add_argument("--pages", type=int, default=16, help="pages per server")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--periodic", action="store_true", help="pages change on a fixed period, not at random")
    parser.add_argument("--compare", action="store_true", help="and the same crawl without the objectives")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--_without", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    return parser


def objectives(pages: int) -> list[dict]:
    """Site 0 holdable, site 1 not at its budget, site 2 (the liar) loose."""
    return [
        {"name": "holdable", "server": 0, "pages": "all", "target": 60, "budget": 200_000},
        {"name": "starved", "server": 1, "pages": "all", "target": 5, "budget": 20 * pages},
        {"name": "liar", "server": 2, "pages": "all", "target": 30, "budget": 200_000},
    ]


def _spec(args):
    from testweb.changing import ChangingSpec

    return ChangingSpec(servers=3, pages=args.pages, min_interval=20.0, max_interval=60.0, min_size=2_000,
                        max_size=20_000, seed=args.seed, sitemaps=True, liars=(2,), indexnow_key=KEY,
                        poisson=not args.periodic, server_intervals={2: (600.0, 1200.0)}, hourly=False)  # fmt: skip


def true_staleness(web, pages: list, stored: dict[str, str], at: float) -> list[float]:
    """Each page's true staleness now: how long its stored copy (by checksum) has not been the live page."""
    out = []
    for page in pages:
        checksum = stored.get(web.url(page))
        if checksum is None:
            continue
        since = web.stale_since(page, checksum, at)
        out.append(0.0 if since is None else max(0.0, at - since))
    return out


def _stored(web) -> dict[str, str]:
    from crawlcore.models import Page

    return dict(Page.objects.values_list("url__url", "checksum"))


def _sample(web, objs: dict) -> dict[str, tuple[float | None, float | None]]:
    """(reported p95, true p95) of each objective now."""
    from crawlcore.selectors_freshness import objective_status
    from scheduling.freshness import percentile

    now = time.time()
    stored = _stored(web)
    out = {}
    for name, (obj, pages) in objs.items():
        reported = objective_status(obj, with_hours=False)["p95_staleness_s"] if obj is not None else None
        out[name] = (reported, percentile(true_staleness(web, pages, stored, now), 95))
    return out


def _push(web, page) -> dict:
    """Push one page by IndexNow (the receiver's service) and time its next fetch."""
    from crawlcore.models import Page, Url
    from crawlcore.services.indexnow import indexnow_push

    url = web.url(page)
    before = Page.objects.filter(url__url=url).values_list("fetched_at", flat=True).first()
    pushed = time.time()
    answer = indexnow_push(host=web.servers[page.server].host, key=KEY, urls=[url])
    return {"url": url, "status": answer.status, "pushed": pushed, "before": before,
            "url_id": Url.objects.filter(url=url).values_list("id", flat=True).first()}  # fmt: skip


def _push_done(push: dict) -> float | None:
    from crawlcore.models import Page

    fetched = Page.objects.filter(url_id=push["url_id"]).values_list("fetched_at", flat=True).first()
    if fetched is None or fetched == push["before"] or fetched.timestamp() < push["pushed"]:
        return None
    return round(fetched.timestamp() - push["pushed"], 1)


def _stale_page(web, pages: list):
    stored = _stored(web)
    now = time.time()
    for page in pages:
        checksum = stored.get(web.url(page))
        if checksum and web.stale_since(page, checksum, now) is not None:
            return page
    return pages[0]


def _setup(web, args) -> dict:
    from crawlcore.models import FreshnessObjective
    from crawlcore.services.freshness import freshness_save

    objs = {}
    for o in objectives(args.pages):
        server = web.servers[o["server"]]
        site = f"http://{server.host}:{web.port(server.index)}"
        pages = [p for p in web.pages.values() if p.server == o["server"]]
        if getattr(args, "_without", False):
            objs[o["name"]] = (None, pages)  # the site's pages, measured, with no objective over them
            continue
        freshness_save(spec={"name": o["name"], "site": site, "pages": o["pages"], "target": o["target"],
                             "budget": o["budget"]})  # fmt: skip
        objs[o["name"]] = (FreshnessObjective.objects.select_related("site").get(name=o["name"]), pages)
    return objs


def _warm_up(deadline: float) -> None:
    from crawlcore.models import Url
    from crawlcore.services.load_dispatch import dispatch_due

    while time.time() < deadline and Url.objects.filter(state="init").exists():
        dispatch_due()
        time.sleep(DISPATCH_EVERY)


def _crawl(web, objs: dict, args) -> dict:
    from crawlcore.services.load_dispatch import dispatch_due, reconcile
    from crawlcore.services.sweep import scan_sweep
    from crawler.lifecycle import Agent

    start = time.time()
    end = start + args.seconds
    samples: dict[str, list] = {name: [] for name in objs}
    push, push_latency = None, None
    t_sweep = t_sample = t_reconcile = start
    while time.time() < end:
        now = time.time()
        dispatch_due()
        if now >= t_sweep:
            scan_sweep(agent=Agent.ACTIVE_SCAN)
            t_sweep = now + PERIOD
        if now >= t_sample and now > start + MEASURE_AFTER:
            for name, pair in _sample(web, objs).items():
                samples[name].append((*pair, round(now - start, 1)))
            t_sample = now + SAMPLE_EVERY
        if now >= t_reconcile + 10:
            reconcile()
            t_reconcile = now
        if push is None and now > end - 60:
            push = _push(web, _stale_page(web, objs["holdable"][1]))
        if push is not None and push_latency is None:
            push_latency = _push_done(push)
        time.sleep(DISPATCH_EVERY)
    return {"samples": samples, "push": push, "push_latency_s": push_latency}


def _summary(web, objs: dict, crawled: dict) -> dict:
    from crawlcore.selectors_freshness import objective_status, servers_honesty, servers_lastmod_untrusted
    from crawlcore.services.freshness_choice import servers_budget

    out: dict = {"objectives": {}, "honesty": {}, "requests": {}}
    caps = servers_budget(now=None)
    honesty = servers_honesty([o.site_id for o, _ in objs.values()])
    for name, (obj, _) in objs.items():
        series = [(at, r, t) for r, t, at in crawled["samples"][name]]
        pairs = [(r, t) for _, r, t in series if r is not None and t is not None]
        reported = statistics.mean(r for r, _ in pairs) if pairs else None
        truth = statistics.mean(t for _, t in pairs) if pairs else None
        status = objective_status(obj, with_hours=False)
        out["objectives"][name] = {
            "reported_p95_s": reported and round(reported, 1), "true_p95_s": truth and round(truth, 1),
            "samples": len(pairs), "met": status["met"], "attainable": status["attainable"],
            "held_share": round(sum(1 for r, _ in pairs if r <= obj.target) / len(pairs), 2) if pairs else None,
            "budget": obj.budget, "budget_needed": status["budget_needed"], "target_s": obj.target,
            "series": [(at, r and round(r, 1), t and round(t, 1)) for at, r, t in series],
        }  # fmt: skip
        server = web.servers[[p for p in objs[name][1]][0].server]
        out["honesty"][name] = honesty.get(obj.site_id)
        out["requests"][name] = {"received": web.requests_by_server.get(server.index, 0), "budget": caps[obj.site_id]}
    untrusted = set(servers_lastmod_untrusted())
    out["lastmod_ignored"] = {name: obj.site_id in untrusted for name, (obj, _) in objs.items()}
    push = crawled["push"] or {}
    out["push"] = {"status": push.get("status"), "fetched_after_s": crawled["push_latency_s"]}
    return out


def _summary_without(web, objs: dict, crawled: dict) -> dict:
    """The crawl without objectives: each site's true p95 (its samples' mean) and the requests it received."""
    out: dict = {"sites": {}}
    for name, (_, pages) in objs.items():
        truth = [t for _, t, _ in crawled["samples"][name] if t is not None]
        out["sites"][name] = {
            "true_p95_s": round(statistics.mean(truth), 1) if truth else None,
            "samples": len(truth),
            "received": web.requests_by_server.get(pages[0].server, 0),
        }
    return out


def child(args) -> dict:
    import django

    django.setup()
    from crawladmin.runner import crawl_seeds_insert, crawl_workers
    from crawlcore.schema import schema_ensure
    from testweb.changing import ChangingWeb

    schema_ensure()
    web = ChangingWeb(_spec(args)).start()
    try:
        crawl_seeds_insert(seeds=web.urls(), scope="host")
        with crawl_workers(threads=4):
            _warm_up(time.time() + 120)
            objs = _setup(web, args)
            crawled = _crawl(web, objs, args)
            return _summary_without(web, objs, crawled) if args._without else _summary(web, objs, crawled)
    finally:
        web.stop()


def _child_env(tmp: Path) -> dict[str, str]:
    keep = ("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_", "CRAWLADMIN_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
    env.update({
        "DJANGO_SETTINGS_MODULE": "crawladmin.settings",
        "DJANGO_SECRET_KEY": "bench-freshness-live-" + uuid.uuid4().hex * 2,
        "CRAWLADMIN_DATA_DIR": str(tmp),
        "DATABASE_URL": f"sqlite:///{tmp / 'crawl.sqlite3'}",
        "CELERY_BROKER_URL": "memory://",
        "CRAWL_ALLOW_PRIVATE": "127.0.0.0/8",
        "CRAWL_DEFAULT_DELAY": "0.05",
        "CRAWL_EMBEDDED_THREADS": "4",
        "CRAWL_STALENESS_PERIOD": str(PERIOD),
        "CRAWL_RECRAWL_CYCLE": "20",  # the change-rate prior: a change every 20 s until checks say less
        "CRAWL_REVISIT_AFTER": "600",  # only the objectives and the change signals move pages in the run
        "CRAWL_SITEMAP_TTL": "5",
        "CRAWL_ACTIVE_SCAN_CAPACITY": "40",
        "CRAWL_REDISPATCH_AFTER": "10",
        "CRAWL_LEASE_SECONDS": "30",
        "CRAWL_TASK_BUDGET": "10",
    })  # fmt: skip
    return env


def run(args, *, without: bool = False) -> dict:
    """One crawl in a child process (a database and settings of its own): under the objectives, or `without`."""
    with tempfile.TemporaryDirectory(prefix="freshness-live-") as tmp:
        cmd = [sys.executable, "-m", "bench.freshness_live", "--_child", "--seconds", str(args.seconds)]
        cmd += ["--pages", str(args.pages), "--seed", str(args.seed)] + (["--periodic"] if args.periodic else [])
        cmd += ["--_without"] if without else []
        proc = subprocess.run(cmd, cwd=ROOT, env=_child_env(Path(tmp)), capture_output=True, text=True,
                              timeout=args.seconds + 300)  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"the crawl failed:\n{proc.stderr[-4000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


def report(out: dict) -> str:
    lines = ["objective  reported p95 s  true p95 s  met  attainable  budget  needed  honesty  requests"]
    for name, o in out["objectives"].items():
        r = out["requests"][name]
        lines.append(f"{name:<10} {o['reported_p95_s']!s:>14} {o['true_p95_s']!s:>11} {o['met']!s:>4} "
                     f"{o['attainable']!s:>11} {o['budget']:>7} {o['budget_needed']:>7} "
                     f"{out['honesty'][name]!s:>8} {r['received']:>9}")  # fmt: skip
    lines.append(f"IndexNow push: HTTP {out['push']['status']}, fetched again after {out['push']['fetched_after_s']} s")
    if "without" in out:
        lines.append("the same crawl without objectives:")
        lines.append("site       true p95 s  requests (with objectives: true p95 s, requests)")
        for name, w in out["without"]["sites"].items():
            o, r = out["objectives"][name], out["requests"][name]
            lines.append(
                f"{name:<10} {w['true_p95_s']!s:>10} {w['received']:>9}   ({o['true_p95_s']}, {r['received']})"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args._child:
        print(json.dumps(child(args), default=str))
        return 0
    out = run(args)
    if args.compare:
        out["without"] = run(args, without=True)
    print(json.dumps(out, indent=2, default=str) if args.json else report(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
