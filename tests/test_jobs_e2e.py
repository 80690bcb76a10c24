"""Crawl jobs end to end, as an operator runs them: `apply` a YAML file of two jobs, `crawl --job` each in the
embedded mode against a local web with an access log, and read a job's progress from the REST API.

The web (testweb.jobweb) writes each page's depth into its path, so the access log alone proves that the
depth-limited job asked for nothing deeper than its limit and nothing its exclude pattern names, and that
the page-capped job asked for no more pages than its cap."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from testweb.jobweb import JobWeb
from testweb.ports import free_port

from .crawlcheck import ROOT, clean_env

FILE = """\
servers:
  - url: {wide}
    group: news
jobs:
  - name: docs
    seeds: [{tree}]
    scope: host
    max_depth: 2
    exclude: ["^/calendar/"]
  - name: news
    seeds: [{wide}]
    scope: host
    max_pages: 20
    delay: 0
"""


def manage(env: dict[str, str], *args: str, timeout: float = 300, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    if ok:
        assert proc.returncode == 0, f"{args} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    data = tmp_path_factory.mktemp("jobs")
    with JobWeb(log_path=str(data / "access.log")) as web:
        env = clean_env(CRAWLADMIN_DATA_DIR=str(data))
        path = data / "jobs.yaml"
        path.write_text(FILE.format(tree=web.tree, wide=web.wide))
        first = manage(env, "apply", str(path)).stdout.splitlines()
        changed = data / "changed.yaml"
        changed.write_text(
            FILE.format(tree=web.tree, wide=web.wide).replace("max_pages: 20", "max_pages: 25")
            + "  - name: extra\n    seeds: [" + web.tree + "]\n"
        )
        dry = manage(env, "apply", "--dry-run", str(changed)).stdout.splitlines()
        second = manage(env, "apply", str(path)).stdout.splitlines()
        docs = json.loads(manage(env, "crawl", "--job", "docs", "--json", "--no-progress").stdout)
        news = json.loads(manage(env, "crawl", "--job", "news", "--json", "--no-progress").stdout)
        yield web, env, data, first, dry, second, docs, news


def test_apply_prints_what_it_creates(jobs):
    web, *_ = jobs
    first = jobs[3]
    assert first == [f"created server {web.wide.rstrip('/')}", "created job docs", "created job news"]


def test_dry_run_of_a_changed_file_reports_and_changes_nothing(jobs):
    web, env, _, _, dry, second, _, _ = jobs
    assert dry == [f"unchanged server {web.wide.rstrip('/')}", "unchanged job docs", "changed job news",
                   "  max_pages: 20 -> 25", "created job extra"]  # fmt: skip
    # The dry run wrote nothing: the second apply of the first file finds everything as it left it.
    assert second == [f"unchanged server {web.wide.rstrip('/')}", "unchanged job docs", "unchanged job news"]
    listed = json.loads(manage(env, "job", "list", "--json").stdout)
    assert [j["name"] for j in listed] == ["docs", "news"]


def test_depth_limited_job_fetches_nothing_deeper_nor_excluded(jobs):
    web, _, data, _, _, _, docs, _ = jobs
    hits = [h for h in web.hits_of(web.tree_host) if h.path not in ("/robots.txt", "/sitemap.xml")]
    assert hits, "the docs job fetched nothing"
    assert not [h.path for h in hits if h.path.startswith("/calendar/")]
    depths = [JobWeb.depth_of(h.path) for h in hits]
    assert None not in depths and max(depths) <= 2
    # Everything the limits allow was fetched, once.
    assert sorted(h.path for h in hits) == sorted(web.tree_pages_within(2))
    assert docs["stopped"] == "done"
    assert docs["job"]["progress"]["done"] == len(web.tree_pages_within(2))
    # The log file the web wrote says the same.
    logged = (data / "access.log").read_text().splitlines()
    assert not [line for line in logged if f"{web.tree_host} " in line and "/calendar/" in line]


def test_page_capped_job_fetches_at_most_its_cap(jobs):
    web, _, _, _, _, _, _, news = jobs
    pages = [h for h in web.hits_of(web.wide_host) if h.path not in ("/robots.txt", "/sitemap.xml")]
    assert 0 < len(pages) <= 20
    assert len({h.path for h in pages}) == len(pages)  # each fetched once
    assert news["job"]["progress"]["done"] == len(pages) == 20
    # The other job's site saw nothing of this job.
    assert news["job"]["runs"][0]["stop_reason"] == "done"


def _get(url: str, token: str | None) -> tuple[int, dict]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@pytest.fixture(scope="module")
def api(jobs):
    """The web app on loopback (runserver), a viewer, and a token for it from `manage.py api_token`."""
    _, env, *_ = jobs
    manage(env, "shell", "-c", "from django.contrib.auth.models import Group, User; "
           "u = User.objects.create_user('watcher', password='x-unused-1'); "
           "u.groups.add(Group.objects.get(name='viewer'))")  # fmt: skip
    out = manage(env, "api_token", "watcher").stdout
    token = out.split()[-1]
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError("the web app did not come up within 120 s") from None
                time.sleep(0.5)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_api_token_is_the_last_word_and_stored_hashed(jobs, api):
    _, env, *_ = jobs
    _, token = api
    assert token.startswith("ca_") and len(token) > 30
    stored = manage(env, "shell", "-c", "from dashboard.models import ApiToken; "
                    "print(list(ApiToken.objects.values_list('key_hash', flat=True)))").stdout  # fmt: skip
    assert token not in stored


def test_api_returns_a_jobs_progress_with_a_token_and_401_without(api):
    base, token = api
    code, body = _get(f"{base}/api/v1/jobs/news/", token)
    assert code == 200, body
    assert body["name"] == "news" and body["max_pages"] == 20
    progress = body["progress"]
    assert progress["done"] == 20 and progress["queued"] == 0 and progress["failed"] == 0
    assert progress["eta_seconds"] == 0
    assert isinstance(body["stalled"], list)
    code, body = _get(f"{base}/api/v1/jobs/news/", None)
    assert code == 401 and body["error"] == "unauthorized"
    code, body = _get(f"{base}/api/v1/jobs/news/", "ca_not-a-token")
    assert code == 401
    code, body = _get(f"{base}/api/v1/jobs/nothing-here/", token)
    assert code == 404 and body["error"] == "not found"
    code, schema = _get(f"{base}/api/v1/schema", token)
    assert code == 200 and "/api/v1/jobs/{name}/" in schema["paths"]
