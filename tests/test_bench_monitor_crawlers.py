"""bench.monitor_crawlers on a small web: with 1 and 2 crawler numbers (real PostgreSQL, redis-server and
celery worker processes with their own CRAWLER_NUM), every server's checks are written once per round by the
crawler it is pinned to. Its speed is the benchmark's business, not this test's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from testweb.cluster import ROOT

from .conftest import skip_or_fail

pytestmark = pytest.mark.integration


def test_each_crawler_number_checks_its_pinned_servers_and_no_record_is_lost_or_doubled(tmp_path):
    if shutil.which("redis-server") is None:
        skip_or_fail("redis-server is not installed")
    # --out: the test's raw output stays out of bench/results, which holds the quiet runs the documents cite.
    args = ["--crawlers", "1,2", "--urls", "60", "--rounds", "2", "--batch", "20", "--json"]
    args += ["--out", str(tmp_path / "raw.json")]
    proc = subprocess.run(
        [sys.executable, "-m", "bench.monitor_crawlers", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode == 2:
        skip_or_fail(proc.stderr.strip()[-300:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    rows = {(r["mode"], r["crawlers"]): r for r in out["results"]}
    assert set(rows) == {("split", 1), ("split", 2), ("each", 1), ("each", 2)}
    for (mode, n), r in rows.items():
        servers = 60 * (n if mode == "each" else 1)
        assert r["servers"] == servers and r["written"] == r["expected"] == 2 * servers, (mode, n)
        assert r["exact"] and r["rows_on_another_crawler_num"] == 0
        assert r["categories"] == {"normal": 2 * servers}
        assert r["cpu_ms_per_check"]["workers"] > 0 and r["cores_limit_checks_per_second"] > 0
