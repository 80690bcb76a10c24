"""Rendering: what `render: auto` finds for what it costs, against a crawl that renders every page.

A generated web (testweb.jsweb) where a stated share of pages build links and text with JavaScript is crawled
three times by the embedded crawl (`manage.py crawl`, SQLite, in-process worker, real Chromium):
CRAWL_RENDER=never (the raw HTML only), auto (the detector and the per-host decision), always (every HTML
page rendered). Printed: links and text found (as a share of the full render's), pages rendered, CPU ms
(the crawl process and all its children, Chromium included) and peak RSS of the process tree (sampled), and
CPU ms per plain page (never's) and per rendered page (always' extra over never, per page rendered).

    python -m bench.render --pages 120 --js-share 0.25

Goals: auto finds >= 95 % of the full render's links, renders <= 35 % of pages, at <= 30 % of its CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from crawler.parse import extract  # noqa: E402
from testweb.jsweb import JsWeb  # noqa: E402


def _tree_rss(pid: int) -> int:
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                fields = f.read().split()
            total += (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE")
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def crawl(origin: str, mode: str, data: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_"))}
    env.update(
        CRAWLADMIN_DATA_DIR=data, CRAWL_ALLOW_PRIVATE="127.0.0.0/8", CRAWL_DEFAULT_DELAY="0", CRAWL_SCOPE="host",
        CRAWL_RENDER=mode, CRAWL_RENDER_SETTLE_MS="300", CRAWL_SERVER_CONCURRENCY="2",
    )  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "crawl", "--json", "--no-progress", origin + "/"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.2):
            peak = max(peak, _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate(timeout=3600)
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"crawl ({mode}) failed:\n{err[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_ms = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000
    db = sqlite3.connect(str(Path(data) / "crawladmin.sqlite3"))
    try:
        links = set(
            db.execute(
                "SELECT f.url, t.url FROM crawladmin_link l JOIN crawladmin_url f ON f.id = l.from_url_id"
                " JOIN crawladmin_url t ON t.id = l.to_url_id"
            ).fetchall()
        )
        pages = db.execute(
            "SELECT u.url, p.body_z, p.dom_z, p.rendered_at IS NOT NULL FROM crawladmin_page p"
            " JOIN crawladmin_url u ON u.id = p.url_id WHERE p.content_type LIKE 'text/html%'"
        ).fetchall()
    finally:
        db.close()
    words: set[tuple[str, str]] = set()
    for url, body_z, dom_z, _ in pages:
        html = zlib.decompress(dom_z or body_z)
        words |= {(url, w) for w in extract(html, url, content_type="text/html; charset=utf-8").text.split()}
    rendered = sum(1 for *_, r in pages if r)
    return {
        "mode": mode, "seconds": round(time.monotonic() - started, 1), "cpu_ms": round(cpu_ms),
        "peak_rss_mb": round(peak / 2**20), "pages": len(pages), "rendered": rendered, "links": links,
        "words": words, "summary": json.loads(out).get("stopped"),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=120)
    parser.add_argument("--js-share", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs = {}
    with JsWeb(pages=args.pages, js_share=args.js_share, seed=args.seed) as web, tempfile.TemporaryDirectory() as tmp:
        print(f"web: {len(web.pages)} pages, {len(web.js)} built by JavaScript, "
              f"{len(web.hidden)} linked only by scripts")  # fmt: skip
        for mode in ("never", "auto", "always"):
            runs[mode] = crawl(web.origin, mode, str(Path(tmp) / mode))
            r = runs[mode]
            print(f"{mode:>6}: {r['pages']} pages, {r['rendered']} rendered, {len(r['links'])} links, "
                  f"{r['cpu_ms']} CPU ms, peak RSS {r['peak_rss_mb']} MiB, "
                  f"{r['seconds']} s ({r['summary']})")  # fmt: skip
    full, auto, never = runs["always"], runs["auto"], runs["never"]
    share = lambda a, b: len(a & b) / max(1, len(b))  # noqa: E731
    plain_ms = never["cpu_ms"] / max(1, never["pages"])
    rendered_ms = (full["cpu_ms"] - never["cpu_ms"]) / max(1, full["rendered"])
    figures = {
        "links_found_auto": round(share(auto["links"], full["links"]), 4),
        "links_found_never": round(share(never["links"], full["links"]), 4),
        "text_found_auto": round(share(auto["words"], full["words"]), 4),
        "text_found_never": round(share(never["words"], full["words"]), 4),
        "pages_rendered_auto": round(auto["rendered"] / max(1, auto["pages"]), 4),
        "cpu_auto_of_full": round(auto["cpu_ms"] / max(1, full["cpu_ms"]), 4),
        "cpu_ms_per_plain_page": round(plain_ms, 1),
        "cpu_ms_per_rendered_page": round(rendered_ms, 1),
        "peak_rss_mb": {m: r["peak_rss_mb"] for m, r in runs.items()},
    }
    print(json.dumps(figures, indent=2))
    goals = (
        figures["links_found_auto"] >= 0.95,
        figures["pages_rendered_auto"] <= 0.35,
        figures["cpu_auto_of_full"] <= 0.30,
    )
    print("goals (links >= 95 %, rendered <= 35 %, CPU <= 30 %):", ", ".join("met" if g else "NOT met" for g in goals))


if __name__ == "__main__":
    main()
