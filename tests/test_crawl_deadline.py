"""`manage.py crawl --max-seconds S` ends its process at S plus a short grace, whatever its threads are
doing: here one of them is in a request whose body trickles for minutes (the body timeout set longer than
that), which no stop signal reaches."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from crawladmin.management.commands.crawl import SHUTDOWN_GRACE
from testweb.unattended import TRICKLE_FOR, UnattendedWeb

from .crawlcheck import ROOT, clean_env

MAX_SECONDS = 8
# Generous, for a loaded machine: the interpreter's start, migrating a fresh SQLite file, the summary.
SLACK = 60.0


def test_crawl_ends_at_max_seconds_while_a_thread_is_stuck_in_a_request(tmp_path):
    with UnattendedWeb(first=153) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), CRAWL_BODY_TIMEOUT="600", CRAWL_TASK_BUDGET="600")
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "manage.py", "crawl", "--json", "--no-progress", "--max-seconds", str(MAX_SECONDS),
             web.url("slow", "/")],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=TRICKLE_FOR - 30,
        )  # fmt: skip
        took = time.monotonic() - started
        assert web.fetched("slow").get("/trickle") == [200]  # the request was under way when the crawl stopped
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["stopped"] == "max-seconds"
    assert summary["seconds"] < MAX_SECONDS + SHUTDOWN_GRACE + 15
    assert "still busy" in proc.stderr
    assert took < MAX_SECONDS + SHUTDOWN_GRACE + SLACK
