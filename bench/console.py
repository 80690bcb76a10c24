"""Benchmark: the servers grid and list at scale. Prints figures; asserts nothing.

    python -m bench.console [--sizes 500,5000] [--requests 40]

For each size: a fresh database on the local PostgreSQL (127.0.0.1:5432, user postgres), migrated, then
in a child process N monitored servers in four groups (1 % down, each with one check from the last
minute), a superuser, and Django's test client asking each page --requests times: the tiles
(/dashboard/), the list (/dashboard/?view=list), the list by group, and a search (?q=, never cached).
Every request is timed with the dashboard's per-process cache emptied first, so each one computes the
page (a viewer within SHARED_VIEW_TTL of another gets the kept page, far cheaper); p50 and p95 in ms. The
machine's 1-minute load average is printed beside: other processes on a shared box take CPU from the run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import uuid

from bench.harness.db import ROOT, fresh_database, manage

PAGES = {
    "grid": "/dashboard/",
    "list": "/dashboard/?view=list",
    "list by group": "/dashboard/?view=list&by=group",
    "search": "/dashboard/?view=list&q=10.7",
}


def _child(n: int, requests: int) -> dict:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client
    from django.utils import timezone

    from crawlcore.models import Server, StatusCheck
    from dashboard import cache
    from monitoring.models import ServerMonitor

    now = timezone.now()
    Server.objects.bulk_create(
        Server(scheme="http", host=f"10.{i // 62500}.{i // 250 % 250}.{1 + i % 250}", port=80, group=f"g{i % 4}")
        for i in range(n)
    )
    ids = list(Server.objects.values_list("id", flat=True))
    ServerMonitor.objects.bulk_create(
        ServerMonitor(server_id=sid, status="disconnect" if k % 100 == 0 else "normal", last_check_at=now,
                      status_since=now, interval_s=300)
        for k, sid in enumerate(ids)
    )  # fmt: skip
    StatusCheck.objects.bulk_create(
        StatusCheck(server_id=sid, requested_url="http://x/", checked_at=now, status_code=200, category="normal",
                    latency_ms=20.0, agent="monitor")
        for sid in ids
    )  # fmt: skip
    user = User.objects.create_superuser("bench", password="bench-not-secret")
    client = Client()
    client.force_login(user)
    out = {}
    for name, url in PAGES.items():
        client.get(url)  # warm: templates compiled, connections open
        times = []
        for _ in range(requests):
            cache.clear()
            started = timezone.now()
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            times.append((timezone.now() - started).total_seconds() * 1000)
        times.sort()
        out[name] = {"p50": statistics.median(times), "p95": times[max(0, round(0.95 * len(times)) - 1)]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,5000")
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(*args.child)))
        return
    for size in [int(s) for s in args.sizes.split(",")]:
        with fresh_database("console") as url:
            env = {
                **os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "crawladmin.settings",
                "DJANGO_SECRET_KEY": "bench-console-" + uuid.uuid4().hex * 2, "DJANGO_SECURE": "false",
                "DJANGO_ALLOWED_HOSTS": "testserver", "CELERY_BROKER_URL": "memory://",
            }  # fmt: skip
            manage(env, "migrate", "-v0")
            proc = subprocess.run(
                [sys.executable, "-m", "bench.console", "--child", str(size), str(args.requests)],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
            )  # fmt: skip
            if proc.returncode:
                raise SystemExit(proc.stderr[-3000:])
            figures = json.loads(proc.stdout.strip().splitlines()[-1])
        load = os.getloadavg()[0]
        for page, f in figures.items():
            print(f"{size:>6} servers  {page:<14} p50 {f['p50']:7.1f} ms  p95 {f['p95']:7.1f} ms  (load {load:.1f})")


if __name__ == "__main__":
    main()
