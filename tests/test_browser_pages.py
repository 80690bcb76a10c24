"""Every page in headless Chromium at a desktop (1400 px) and a phone (400 px) width: no horizontal page
scroll, no console errors, every link on the page resolves, and the grid's stale and unconfirmed states
render. Screenshots are kept under the test's tmp dir (their paths are printed).

Same requirements as tests/test_browser.py: /usr/bin/chromium and /usr/bin/chromedriver, else skipped.
"""

from __future__ import annotations

import os
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from crawlcore.models import Server, StatusCheck
from dashboard import cache
from dashboard.groups import groups_ensure
from dashboard.models import StatusPage
from monitoring.models import ServerMonitor

from .chromium import CHROMEDRIVER, CHROMIUM

PASSWORD = "pw-not-secret"
WIDTHS = (1400, 400)

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (requirements-dev.txt)")
if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(f"{CHROMIUM} or {CHROMEDRIVER} missing", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from .chromium import headless_chromium  # noqa: E402
from .test_browser import data as data_fixture  # noqa: E402,F401  (fixture "data": checks, rollups, a dead link)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def browser():
    with headless_chromium(flags=["--hide-scrollbars"], console_log=True) as driver:
        yield driver


@pytest.fixture
def states(request):
    """Beside `data`'s erroring server: one whose monitor went quiet (stale) and one whose newest check
    failed once (unconfirmed)."""
    data = request.getfixturevalue("data_fixture")
    Server.objects.filter(id=data.id).update(group="uni")
    StatusPage.objects.create(slug="uni", group="uni")
    now = timezone.now()
    stale = Server.objects.create(scheme="http", host="quiet.example", port=80)
    ServerMonitor.objects.create(server=stale, status="normal", last_check_at=now - timedelta(hours=1))
    wobbly = Server.objects.create(scheme="http", host="wobbly.example", port=80)
    ServerMonitor.objects.create(server=wobbly, status="normal", candidate="disconnect", streak=1, last_check_at=now)
    for server, category, code in ((stale, "normal", 200), (wobbly, "disconnect", None)):
        StatusCheck.objects.create(
            server=server,
            requested_url=f"{server.origin}/",
            checked_at=now,
            agent="monitor",
            status_code=code,
            category=category,
            latency_ms=20.0,
            failure_kind="refused" if code is None else "",
        )
    return data


def log_in(driver, base: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{base}/dashboard/login/")
    WebDriverWait(driver, 10).until(ec.presence_of_element_located((By.ID, "id_username"))).send_keys("op")
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form.login button[type=submit]").click()
    WebDriverWait(driver, 10).until(ec.presence_of_element_located((By.ID, "grid")))


def pages(server_id: int) -> list[str]:
    return [
        "/dashboard/",
        f"/dashboard/servers/{server_id}/",
        f"/dashboard/servers/{server_id}/?range=1h",
        "/dashboard/crawl/",
        "/dashboard/dead-links/",
        f"/dashboard/dead-links/{server_id}/",
        "/dashboard/heatmap/",
        "/analyzer/",
        "/dashboard/no-such-page/",
        "/status/uni/",
    ]


def _console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE" and "404" not in e["message"]]


def test_every_page_fits_a_phone_and_a_desktop_without_console_errors_or_dead_links(
    browser, live_server, states, tmp_path
):
    log_in(browser, live_server.url)
    checker = Client()
    checker.force_login(User.objects.get(username="op"))
    seen_links: set[str] = set()
    problems = []
    for width in WIDTHS:
        browser.set_window_size(width, 900)
        for n, path in enumerate(pages(states.id)):
            browser.get(f"{live_server.url}{path}")
            WebDriverWait(browser, 10).until(lambda d: d.execute_script("return document.readyState") == "complete")
            overflow = browser.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            if overflow > 0:
                wide = browser.execute_script(
                    "const w = document.documentElement.clientWidth; return [...document.querySelectorAll('body *')]"
                    ".filter(e => e.getBoundingClientRect().right > w + 1).slice(0, 5)"
                    ".map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"
                )
                problems.append(f"{path} at {width} px: {overflow} px too wide ({wide})")
            errors = _console_errors(browser)
            if errors:
                problems.append(f"{path} at {width} px: console {errors}")
            browser.save_screenshot(str(tmp_path / f"{width}-{n}-{path.strip('/').replace('/', '_') or 'grid'}.png"))
            for href in browser.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href)"):
                parts = urlsplit(href)
                if parts.netloc == urlsplit(live_server.url).netloc and not parts.path.startswith("/admin/"):
                    seen_links.add(parts.path + (f"?{parts.query}" if parts.query else ""))
    for link in sorted(seen_links):
        status = checker.get(link).status_code
        if status >= 400 and "no-such-page" not in link:
            problems.append(f"link {link}: HTTP {status}")
    print(f"\nscreenshots: {tmp_path}")
    assert not problems, "\n".join(problems)


def test_stale_and_unconfirmed_tiles_render_in_their_own_colours(browser, live_server, states, tmp_path):
    cache.clear()
    groups_ensure()
    log_in(browser, live_server.url)
    browser.set_window_size(400, 900)
    quiet = browser.find_element(By.XPATH, "//a[contains(@class,'tile')][.//span[text()='http://quiet.example']]")
    wobbly = browser.find_element(By.XPATH, "//a[contains(@class,'tile')][.//span[text()='http://wobbly.example']]")
    assert "stale" in quiet.get_attribute("class") and "stale · last check" in quiet.text
    assert "unconfirmed" in wobbly.get_attribute("class") and "failed 1 of 2 to confirm" in wobbly.text
    colour = browser.execute_script("return getComputedStyle(arguments[0]).borderLeftColor", wobbly)
    assert colour == "rgb(240, 140, 0)"  # amber
    browser.save_screenshot(str(tmp_path / "states.png"))


def test_an_open_grid_turns_a_failing_server_amber_then_red_without_a_reload(browser, live_server, states, settings):
    """The acceptance scenario in the browser: the monitor records a failure, then confirms it; the grid,
    left open, shows each within its refresh (half the check interval, here 5 s)."""
    settings.MONITOR_INTERVAL = 10.0
    cache.clear()
    log_in(browser, live_server.url)
    tile = f".tile[data-server='{states.id}']"
    assert browser.find_element(By.CSS_SELECTOR, "#grid").get_attribute("data-refresh") == "5"
    browser.execute_script("window.__same_page = true")  # gone if the page reloads
    ServerMonitor.objects.filter(server_id=states.id).update(status="normal", candidate="disconnect", streak=1)
    WebDriverWait(browser, 15).until(
        lambda d: "unconfirmed" in d.find_element(By.CSS_SELECTOR, tile).get_attribute("class")
    )
    ServerMonitor.objects.filter(server_id=states.id).update(status="disconnect", candidate="", streak=0)
    WebDriverWait(browser, 15).until(
        lambda d: "disconnect" in d.find_element(By.CSS_SELECTOR, tile).get_attribute("class")
    )
    assert browser.execute_script("return window.__same_page === true")
    assert not _console_errors(browser)
