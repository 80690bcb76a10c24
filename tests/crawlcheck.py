"""Shared by the end-to-end tests: run `manage.py crawl` as a user would, and compare the database
with what the local test web says is reachable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from testweb import TestWebServer

ROOT = Path(__file__).resolve().parent.parent

# Fast settings for the local test web: no politeness delay against our own servers, short timeouts
# so the silent server costs a second, loopback allowed explicitly.
FAST_ENV = {
    "CRAWL_ALLOW_PRIVATE": "127.0.0.0/8",
    "ALERTS_ALLOW_PRIVATE": "127.0.0.0/8",
    "CRAWL_DEFAULT_DELAY": "0",
    "CRAWL_CONNECT_TIMEOUT": "2",
    "CRAWL_HEADER_TIMEOUT": "1",
    "CRAWL_BODY_TIMEOUT": "5",
    # A server held (the silent one's robots.txt) is probed after seconds, not a minute: a crawl waits for it.
    "CRAWL_BACKOFF_BASE": "5",
}


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_"))}
    env.update(FAST_ENV)
    env.update(extra)
    return env


def run_crawl(env: dict[str, str], *args: str, timeout: float = 300) -> dict:
    proc = subprocess.run(
        [sys.executable, "manage.py", "crawl", "--json", "--no-progress", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"crawl failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout)


@dataclass
class UrlRow:
    url: str
    state: str
    exclusion_reason: str
    loads: int  # how many times the load agent moved it out of Init


def assert_matches_web(rows: dict[str, UrlRow], web: TestWebServer, *, seeds: list[str] | None = None) -> Counter:
    """Every reachable URL is known and in the state the test web predicts; nothing else is known;
    every visited URL was loaded once and requested once; disallowed URLs were never requested."""
    expected = web.web.expected(seeds)
    assert set(rows) == set(expected), (
        f"unexpected: {sorted(set(rows) - set(expected))[:10]}, missing: {sorted(set(expected) - set(rows))[:10]}"
    )
    outcome_state = {"visited": "visited", "failed": "noresponse1"}
    gets = Counter(web.url_of(r) for r in web.access_log() if r.method == "GET")
    silent = web.web.silent_host
    for url, outcome in expected.items():
        row = rows[url]
        if outcome == "excluded":
            assert row.exclusion_reason == "robots.txt", url
            assert gets[url] == 0, f"robots-disallowed {url} was requested"
            assert row.loads == 0
            continue
        assert row.exclusion_reason == "", (url, row.exclusion_reason)
        assert row.state == outcome_state[outcome], (url, row.state, outcome)
        assert row.loads == 1, f"{url} loaded {row.loads} times"
        if silent is None or f"//{silent}:" not in url:
            assert gets[url] == 1, f"{url} requested {gets[url]} times"
    return Counter(expected.values())
