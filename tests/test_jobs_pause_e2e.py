"""Pause and resume as a new user tries them, in the embedded mode: `crawl --job` runs a job at a page a
second, `job pause` from another shell stops its requests within seconds (the batch in flight hands its URLs
back unfetched), the crawl waits with the run open, `job resume` goes on with the same run, and the run ends
"done" with every page fetched once."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from testweb.jobweb import JobWeb

from .crawlcheck import ROOT, clean_env
from .test_jobs_e2e import manage

FILE = """\
jobs:
  - name: slow
    seeds: [{wide}]
    scope: host
    delay: 1
"""
GRACE = 3.0  # seconds after `job pause` returns within which one request already under way may still land
QUIET = 10.0


def _pages(web: JobWeb) -> int:
    return len([h for h in web.hits_of(web.wide_host) if h.path not in ("/robots.txt", "/sitemap.xml")])


def _wait(what, deadline_s: float, message: str) -> None:
    deadline = time.monotonic() + deadline_s
    while not what():
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(0.2)


def test_pause_stops_requests_within_seconds_and_resume_goes_on_with_the_same_run(tmp_path):
    with JobWeb(variant=79, pages=40, links=3) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path))
        (tmp_path / "jobs.yaml").write_text(FILE.format(wide=web.wide))
        manage(env, "apply", str(tmp_path / "jobs.yaml"))
        crawl = subprocess.Popen(
            [sys.executable, "manage.py", "crawl", "--job", "slow", "--json", "--no-progress", "--max-seconds", "240"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            _wait(lambda: _pages(web) >= 3, 120, "the job did not fetch 3 pages within 120 s")
            manage(env, "job", "pause", "slow")
            time.sleep(GRACE)
            at_pause = _pages(web)
            time.sleep(QUIET)
            assert _pages(web) == at_pause, f"{_pages(web) - at_pause} pages fetched while paused"
            assert at_pause < web.pages
            assert crawl.poll() is None, "the embedded crawl ended while its job was paused"
            shown = json.loads(manage(env, "job", "show", "slow", "--json").stdout)
            assert shown["state"] == "paused" and shown["runs"][0]["ended_at"] is None
            assert shown["progress"]["fetching"] == 0 and shown["progress"]["queued"] > 0
            assert shown["progress"]["eta_seconds"] is None and shown["progress"]["eta_basis"] == "paused"
            manage(env, "job", "resume", "slow")
            t = time.monotonic()
            out, err = crawl.communicate(timeout=200)
            took = time.monotonic() - t
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait(timeout=30)
        assert crawl.returncode == 0, err[-3000:]
        summary = json.loads(out)
        job = summary["job"]
        assert summary["stopped"] == "done" and job["state"] == "idle"
        assert len(job["runs"]) == 1 and job["runs"][0]["stop_reason"] == "done"
        hits = [(h.method, h.path) for h in web.hits_of(web.wide_host) if h.path not in ("/robots.txt", "/sitemap.xml")]
        paths = [p for _, p in hits]
        # Every page once ("/" and /w/0 … /w/{pages-1}): nothing lost, nothing twice.
        assert len(paths) == len(set(paths)) == web.pages + 1, (hits, at_pause, took)
        assert job["runs"][0]["pages"] == web.pages + 1
