"""The crawl jobs' pages in a real browser (headless Chromium through Selenium, against pytest-django's live
server), at a desktop width (1400 px) and a phone's (400 px): no console error, nothing wider than the screen,
the chart drawn, the controls work for an operator and are absent for a viewer, and axe-core finds no serious
or critical violation on the job pages and the login page."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from crawlcore.models import Job, JobRun, Server, Url
from crawlcore.services.jobs import job_save, job_start
from crawler.jobrules import job_spec_check
from dashboard import cache
from dashboard.groups import groups_ensure

from .axe import axe_violations
from .chromium import CHROMEDRIVER, CHROMIUM

PASSWORD = "pw-not-secret"
XSS = "<script>alert(1)</script>"
WIDTHS = (1400, 400)

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (requirements-dev.txt)")
if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(f"{CHROMIUM} or {CHROMEDRIVER} missing: apt-get install -y chromium chromium-driver",
                allow_module_level=True)  # fmt: skip

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from .chromium import headless_chromium  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def browser():
    with headless_chromium(flags=["--window-size=1400,1000"], page_load_timeout=30, console_log=True) as driver:
        yield driver


@pytest.fixture
def data(monkeypatch):
    """A running job of group physics with pages done in this run, samples and a failed URL; an operator and
    a viewer of the group."""
    groups_ensure()
    cache.clear()
    for name, group in (("olga", "operator"), ("vera", "viewer")):
        user = User.objects.create_user(name, password=PASSWORD)
        user.groups.add(Group.objects.get(name=group), Group.objects.get_or_create(name="servers:physics")[0])
    seeds = [f"http://a.example/p{i}" for i in range(12)] + ["http://a.example/cal/1", "http://a.example/cal/2"]
    spec, problems = job_spec_check({"name": "docs", "group": "physics", "seeds": seeds, "max_pages": 40})
    assert not problems, problems
    job_save(spec=spec)
    run = job_start(name="docs")
    now = timezone.now()
    for i, url in enumerate(seeds[:8]):
        at = now - timedelta(seconds=30 - 3 * i)
        Url.objects.filter(url=url).update(state="visited", last_status=200, last_checked_at=at)
    Url.objects.filter(url=seeds[8]).update(url=f"http://a.example/x?{XSS}", state="dead", last_status=500,
                                            last_checked_at=now)  # fmt: skip
    JobRun.objects.filter(id=run.id).update(samples=[[0, 0, 14], [10, 3, 11], [20, 6, 8], [30, 9, 5]],
                                            started_at=now - timedelta(seconds=60))
    Server.objects.filter(host="a.example").update(group="physics")
    return Job.objects.get(name="docs")


def log_in(driver, base: str, user: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{base}/dashboard/login/")
    driver.find_element(By.NAME, "username").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form.login button[type=submit]").click()
    WebDriverWait(driver, 20).until(ec.url_contains("/dashboard/"))
    WebDriverWait(driver, 20).until(lambda d: "/login/" not in d.current_url)


def text_of(driver, element_id: str) -> str:
    """The element's text, "" while the page is being replaced (a form posted, a redirect followed)."""
    try:
        return driver.find_element(By.ID, element_id).text
    except (NoSuchElementException, StaleElementReferenceException):
        return ""


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def fits(driver) -> None:
    width = driver.execute_script("return window.innerWidth")
    scroll = driver.execute_script("return document.documentElement.scrollWidth")
    assert scroll <= width + 1, f"{driver.current_url}: {scroll} px wide on a {width} px screen"


def check(driver, url: str) -> None:
    driver.get(url)
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")
    fits(driver)
    violations = axe_violations(driver)
    assert not violations, f"{url}: {violations}"
    assert not console_errors(driver), f"{url}: {console_errors(driver)}"


@pytest.mark.parametrize("width", WIDTHS)
def test_job_pages_at_desktop_and_phone_width(browser, live_server, data, width):
    browser.set_window_size(width, 1000)
    log_in(browser, live_server.url, "olga")
    browser.get_log("browser")  # the login's own messages are not this test's
    check(browser, f"{live_server.url}/dashboard/jobs/")
    assert browser.find_element(By.CSS_SELECTOR, "tr[data-job=docs] [data-field=state]").text == "running"
    assert browser.find_element(By.CSS_SELECTOR, "tr[data-job=docs] [data-field=eta]").text not in ("", "–")
    check(browser, f"{live_server.url}/dashboard/jobs/docs/")
    painted = browser.execute_script(
        "var c = document.getElementById('job-chart');"
        "var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        "var n = 0; for (var i = 3; i < d.length; i += 4) { if (d[i]) { n++; } } return n;"
    )
    assert painted > 500, "the chart is not drawn"
    assert XSS not in browser.page_source and "x?<script>" in browser.find_element(By.ID, "errors").text
    assert browser.find_element(By.ID, "eta").text not in ("", "–")
    assert "pages of this run" in browser.find_element(By.ID, "eta-basis").text


def test_the_login_page_has_no_serious_accessibility_violation(browser, live_server, data):
    # The grid and the server page are the servers' pages (their palette and templates): checked by their own
    # tests with the same helper (tests/axe.py).
    browser.set_window_size(400, 1000)
    browser.delete_all_cookies()
    browser.get(f"{live_server.url}/dashboard/login/")
    assert not axe_violations(browser), axe_violations(browser)
    fits(browser)


def test_an_operator_pauses_edits_and_stops_and_a_viewer_sees_no_control(browser, live_server, data):
    browser.set_window_size(400, 1000)
    log_in(browser, live_server.url, "olga")
    page = f"{live_server.url}/dashboard/jobs/docs/"
    browser.get(page)
    browser.find_element(By.ID, "job-pause").click()
    WebDriverWait(browser, 20).until(lambda d: text_of(d, "job-state") == "paused")
    assert Job.objects.get(name="docs").state == Job.PAUSED
    assert browser.find_element(By.ID, "eta-basis").text == "paused"
    exclude = browser.find_element(By.ID, "exclude")
    exclude.clear()
    exclude.send_keys("^/cal/")
    browser.find_element(By.ID, "patterns-save").click()
    WebDriverWait(browser, 20, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
        lambda d: "set aside" in d.find_element(By.CSS_SELECTOR, "ul.messages").text
    )
    assert "2 queued URLs set aside" in browser.find_element(By.CSS_SELECTOR, "ul.messages").text
    assert browser.find_element(By.ID, "set-aside").text == "2"
    browser.find_element(By.ID, "job-resume").click()
    WebDriverWait(browser, 20).until(lambda d: text_of(d, "job-state") == "running")
    browser.find_element(By.CSS_SELECTOR, "details.confirm summary").click()
    browser.find_element(By.ID, "job-stop").click()
    # The confirmation is required: the browser does not send the form without it.
    assert Job.objects.get(name="docs").state == Job.RUNNING
    browser.find_element(By.ID, "job-stop-confirm").click()
    browser.find_element(By.ID, "job-stop").click()
    WebDriverWait(browser, 20).until(lambda d: text_of(d, "job-state") == "stopped")
    assert not console_errors(browser)
    log_in(browser, live_server.url, "vera")
    browser.get(page)
    assert browser.find_element(By.ID, "job-state").text == "stopped"
    assert not browser.find_elements(By.CSS_SELECTOR, "#controls, button[id^=job-], #patterns-save")
