"""A crawl job steered from the dashboard in the cluster mode, as an operator does it: PostgreSQL, Redis, celery
workers on load, extract and housekeeping, beat with its database schedule, the web app, and Chromium.

On a local web of two servers (testweb.jobweb, a page a second per server): the operator starts the job from
its page and sees it running with an ETA, pauses it (no request of the job reaches the web for 30 s), adds an
exclude pattern (the page says how many queued URLs it set aside) and resumes (no URL matching it is fetched
afterwards), and the run ends; a JSON receiver routed the job's events got exactly one job.started and one
job.finished; a viewer of the job's group sees the page without controls, a viewer of another group a 404."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from testweb.alerts import webhook_receiver
from testweb.cluster import Processes, manage, postgres_database, redis_server
from testweb.jobweb import JobWeb
from testweb.ports import free_port

from .chromium import CHROMEDRIVER, CHROMIUM, headless_chromium
from .crawlcheck import ROOT, clean_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (requirements-dev.txt)")
if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(f"{CHROMIUM} or {CHROMEDRIVER} missing", allow_module_level=True)

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

PASSWORD = "pw-not-secret"
FILE = """\
servers:
  - url: {tree}
    group: physics
  - url: {wide}
    group: physics
jobs:
  - name: survey
    group: physics
    seeds: [{tree}, {wide}]
    scope: host
    exclude: ["^/calendar/"]
    delay: 1
channels:
  - name: hook
    url: {hook}/jobs
    rules:
      - kinds: job.started,job.finished
        group: physics
"""
USERS = f"""
PASSWORD = "{PASSWORD}"
from django.contrib.auth.models import Group, User
for name, groups in (("olga", ["operator", "servers:physics"]), ("vera", ["viewer", "servers:physics"]),
                     ("carl", ["viewer", "servers:chemistry"])):
    user = User.objects.create_user(name, password=PASSWORD)
    user.groups.add(*(Group.objects.get_or_create(name=g)[0] for g in groups))
"""
EXCLUDED = re.compile(r"^/w/1")  # /w/1.html and /w/10.html … /w/19.html
QUIET = 30.0
GRACE = 4.0  # after the pause is shown: a request already under way may still land


def _until(what, seconds: float, message: str, every: float = 1.0):
    deadline = time.monotonic() + seconds
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(every)


@pytest.fixture
def browser():
    with headless_chromium(flags=["--window-size=1400,1000"], page_load_timeout=60) as driver:
        yield driver


def _log_in(driver, base: str, user: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{base}/dashboard/login/")
    driver.find_element(By.NAME, "username").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form.login button[type=submit]").click()
    _until(lambda: "/login/" not in driver.current_url, 30, f"{user} could not log in")


def _text(driver, element_id: str) -> str:
    """The element's text, "" while the page is being replaced (a form posted, a redirect followed)."""
    try:
        return driver.find_element(By.ID, element_id).text
    except (NoSuchElementException, StaleElementReferenceException):
        return ""


def _pages(web: JobWeb) -> list[str]:
    return [h.path for h in web.hits if h.path not in ("/robots.txt", "/sitemap.xml")]


def _state(driver, page: str) -> str:
    driver.get(page)
    return _text(driver, "job-state")


def _web_app(env: dict[str, str], port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=ROOT,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def up() -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).read()
            return True
        except OSError:
            assert proc.poll() is None, "the web app ended"
            return False

    _until(up, 120, "the web app did not come up within 120 s")
    return proc


def test_an_operator_steers_a_job_from_the_dashboard_in_the_cluster(tmp_path, browser):
    with (postgres_database() as db, redis_server(tmp_path) as broker, webhook_receiver() as hook,
          JobWeb(variant=83, fanout=2, depth=3, pages=40, links=3) as web):  # fmt: skip
        env = clean_env(DATABASE_URL=db, CELERY_BROKER_URL=broker, DJANGO_SECRET_KEY="integration-test-only-" * 3,
                        CRAWLADMIN_DATA_DIR=str(tmp_path), ALERTS_GROUP_WINDOW="1",
                        DJANGO_SECURE="false")  # fmt: skip  (plain http on loopback)
        manage(env, "migrate", "--noinput", timeout=300)
        (tmp_path / "jobs.yaml").write_text(FILE.format(tree=web.tree, wide=web.wide, hook=hook.base))
        manage(env, "apply", str(tmp_path / "jobs.yaml"), timeout=120)
        manage(env, "shell", "-c", USERS, timeout=120)
        port = free_port()
        base, page = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/dashboard/jobs/survey/"
        app = _web_app(env, port)
        try:
            with Processes(env, tmp_path) as procs:
                procs.worker("load", "load", concurrency=4)
                procs.worker("extract", "extract,housekeeping", concurrency=2)
                procs.start("beat", "beat", "-l", "WARNING", "-s", str(tmp_path / "beat-schedule"))
                resumed_at = _steer(browser, base, page, web)
                # The run ends (beat's jobs tick closes it once nothing is left).
                _until(lambda: _state(browser, page) == "idle", 300, "the run did not end within 300 s", every=3)
                runs = browser.find_element(By.ID, "runs").text
                assert "done" in runs, runs
                late = [h.path for h in web.hits[resumed_at:] if h.host == web.wide_host and EXCLUDED.match(h.path)]
                assert not late, f"fetched after the exclude: {late}"
                assert len(_pages(web)) > resumed_at
                # The JSON receiver: one job.started and one job.finished, each delivered once, the title naming
                # the job and the event.
                kinds = lambda: [e["kind"] for r in hook.ok() for e in r.body.get("events", [])]  # noqa: E731
                _until(lambda: "job.finished" in kinds(), 120, f"no job.finished delivered: {kinds()}")
                time.sleep(12)  # a second delivery, were there one, would come within beat's send period
                assert sorted(kinds()) == ["job.finished", "job.started"], kinds()
                for r in hook.ok():
                    for e in r.body["events"]:
                        assert "job survey" in r.body.get("title", "") and e["kind"] in r.body["title"], r.body
                _viewers(browser, base, page)
        finally:
            app.terminate()
            try:
                app.wait(timeout=30)
            except subprocess.TimeoutExpired:
                app.kill()


def _steer(browser, base: str, page: str, web: JobWeb) -> int:
    """Start, see the ETA, pause (nothing fetched), exclude, resume: how many requests the web had seen at
    the resume."""
    _log_in(browser, base, "olga")
    browser.get(page)
    browser.find_element(By.ID, "job-start").click()
    # Running, with an ETA resting on this run's pages.
    _until(lambda: _state(browser, page) == "running" and _text(browser, "eta") not in ("", "–"),
           120, "no ETA shown within 120 s of the start", every=2)  # fmt: skip
    assert "pages of this run" in browser.find_element(By.ID, "eta-basis").text
    browser.find_element(By.ID, "job-pause").click()
    _until(lambda: _text(browser, "job-state") == "paused", 30, "the pause was not shown")
    time.sleep(GRACE)
    at_pause = len(_pages(web))
    time.sleep(QUIET)
    assert len(_pages(web)) == at_pause, f"{len(_pages(web)) - at_pause} requests of the paused job in {QUIET} s"
    browser.get(page)
    exclude = browser.find_element(By.ID, "exclude")
    exclude.send_keys("\n^/w/1")
    browser.find_element(By.ID, "patterns-save").click()
    def saved() -> str:
        try:
            text = browser.find_element(By.CSS_SELECTOR, "ul.messages").text
        except (NoSuchElementException, StaleElementReferenceException):
            return ""
        return text if "set aside" in text else ""

    message = _until(saved, 30, "the patterns were not saved")
    set_aside = int(re.search(r"(\d+) queued URLs? set aside", message).group(1))
    assert set_aside > 0, message
    assert browser.find_element(By.ID, "set-aside").text == str(set_aside)
    resumed_at = len(web.hits)
    browser.find_element(By.ID, "job-resume").click()
    _until(lambda: _text(browser, "job-state") == "running", 30, "the resume was not shown")
    _until(lambda: len(_pages(web)) > at_pause, 60, "nothing fetched after the resume")
    return resumed_at


def _viewers(browser, base: str, page: str) -> None:
    _log_in(browser, base, "vera")
    browser.get(page)
    assert browser.find_element(By.ID, "job-state").text == "idle"
    assert not browser.find_elements(By.CSS_SELECTOR, "#controls, #job-start, #patterns-save")
    _log_in(browser, base, "carl")
    browser.get(page)
    assert "Not found" in browser.find_element(By.TAG_NAME, "h1").text
    assert "survey" not in browser.page_source
