"""Near misses get the answer they were close to: a seed without its scheme, a webhook written as http://,
a server count of one; `make migrate` on the embedded database prints no warning to act on."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from alerts.destinations import DestinationError, destination_parse

from .crawlcheck import ROOT, clean_env


def test_a_seed_without_its_scheme_suggests_the_url_it_means():
    with pytest.raises(CommandError, match=r"did you mean http://example\.org/\?"):
        call_command("crawl", "example.org", "--no-progress")


@pytest.mark.parametrize(("url", "hint"), [("http://hooks.example/x", "json://hooks.example/x"),
                                           ("https://hooks.example/x", "jsons://hooks.example/x")])
def test_a_webhook_written_as_http_points_to_json(url, hint):
    with pytest.raises(DestinationError, match=hint):
        destination_parse(url)


def test_import_of_one_server_says_server_not_servers(tmp_path, db):
    rows = tmp_path / "one.csv"
    rows.write_text("http://127.0.0.5/,demo\n")
    from io import StringIO

    out = StringIO()
    call_command("import_servers", str(rows), stdout=out)
    assert "imported 1 server (1 new, 0 updated); 0 bad rows" in out.getvalue()


def test_migrate_on_the_embedded_database_prints_no_w040_warning(tmp_path):
    proc = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "1"], cwd=ROOT,
        env=clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path)), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "W040" not in proc.stdout + proc.stderr


def test_a_crawl_whose_only_seed_is_refused_says_so_and_exits_non_zero(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, "manage.py", "crawl", "--no-progress", "--max-seconds", "60", f"http://127.0.0.1:{port}/"],
        cwd=ROOT, env=clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path), CRAWL_ALLOW_PRIVATE="127.0.0.0/8"),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, (proc.stdout[-1000:], proc.stderr[-2000:])
    assert f"crawl: no seed could be crawled: http://127.0.0.1:{port}/ (refused)" in proc.stderr
    assert "Traceback" not in proc.stderr
