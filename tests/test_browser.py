"""The dashboard and the admin in a real browser: headless Chromium driven by Selenium against
pytest-django's live server (SQLite), with data made through the ORM and the services.

Needs the Debian packages `chromium` and `chromium-driver` (/usr/bin/chromium, /usr/bin/chromedriver);
skipped with the reason when they are missing. Screenshots go to a fresh temporary directory whose path
is printed.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from crawlcore.models import Link, Page, Server, StatusCheck, Url
from crawlcore.services.urls import NewUrl, urls_insert
from dashboard import cache
from dashboard.groups import groups_ensure
from dashboard.models import CrawlSample
from monitoring.models import HourlyRollup, ServerMonitor, StatusChange

from .chromium import CHROMEDRIVER, CHROMIUM

XSS = "<script>alert(1)</script>"
PASSWORD = "pw-not-secret"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (requirements-dev.txt)")
if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(
        f"{CHROMIUM} or {CHROMEDRIVER} missing: apt-get install -y chromium chromium-driver", allow_module_level=True
    )

from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from .chromium import headless_chromium  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def shots(request):
    path = Path(tempfile.mkdtemp(prefix="crawladmin-screenshots-"))
    yield path
    with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        print(f"\nbrowser screenshots: {path}")


@pytest.fixture(scope="module")
def browser():
    with headless_chromium(flags=["--window-size=1280,1000"]) as driver:
        yield driver


@pytest.fixture
def data():
    """An operator (staff), a server erroring with checks, rollups and a timeline, a page titled with a
    script that links to a Dead URL."""
    groups_ensure()  # this test's database was flushed by the previous one
    cache.clear()  # and the dashboard's process-wide caches may hold the previous test's pages
    user = User.objects.create_user("op", password=PASSWORD, is_staff=True)
    user.groups.add(Group.objects.get(name="operator"))
    now = timezone.now()
    ids = urls_insert(
        urls=[NewUrl(u, depth=0) for u in ("http://a.example/", "http://a.example/gone")], trusted=True
    ).ids
    server = Server.objects.get(host="a.example")
    Url.objects.filter(id=ids["http://a.example/gone"]).update(state="dead", last_status=404)
    home = Url.objects.get(id=ids["http://a.example/"])
    Page.objects.create(url=home, body_z=zlib.compress(b""), title=XSS, checksum="c", fetched_at=now)
    Link.objects.create(from_url=home, to_url_id=ids["http://a.example/gone"])
    ServerMonitor.objects.create(server=server, status="error", status_since=now, last_check_at=now)
    StatusCheck.objects.bulk_create(
        StatusCheck(
            server=server,
            requested_url="http://a.example/",
            checked_at=now - timedelta(minutes=50 - i),
            status_code=200 if i % 4 else 500,
            category="normal" if i % 4 else "error",
            latency_ms=30 + 5 * (i % 7),
            agent="monitor",
        )
        for i in range(40)
    )
    StatusChange.objects.create(server=server, from_status="normal", to_status="error", at=now, reason=XSS)
    hour = now.replace(minute=0, second=0, microsecond=0)
    HourlyRollup.objects.bulk_create(
        HourlyRollup(
            server=server,
            hour=hour - timedelta(hours=h),
            normal=10,
            error=2,
            timed=12,
            latency_mean_ms=40 + h % 5,
            latency_p95_ms=70 + h % 5,
            latency_max_ms=90 + h % 5,
        )
        for h in range(24)
    )
    return server


def wait(driver, condition, seconds: float = 10):
    return WebDriverWait(driver, seconds).until(condition)


def log_in(driver, base: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{base}/")
    wait(driver, ec.presence_of_element_located((By.ID, "id_username"))).send_keys("op")
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form.login button[type=submit]").click()
    wait(driver, ec.presence_of_element_located((By.ID, "grid")))


def assert_no_alert(driver) -> None:
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert  # noqa: B018  (the property raises when there is none)


def _painted(driver, canvas) -> int:
    """Pixels of the canvas something was drawn on."""
    return driver.execute_script(
        "const c = arguments[0]; const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        "let n = 0; for (let i = 3; i < px.length; i += 4) { if (px[i] !== 0) n++; } return n;",
        canvas,
    )


def test_grid_then_server_page_with_its_chart_drawn(browser, live_server, data, shots):
    log_in(browser, live_server.url)
    tile = browser.find_element(By.CSS_SELECTOR, f".tile[data-server='{data.id}']")
    assert "http://a.example" in tile.text and "error" in tile.text
    browser.save_screenshot(str(shots / "1-grid.png"))
    tile.click()
    canvas = wait(browser, ec.presence_of_element_located((By.ID, "latency-chart")))
    wait(browser, lambda d: d.execute_script("return !!window.latencyChart"))
    assert _painted(browser, canvas) > 500, "the latency chart drew (almost) nothing"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#checkbar span.error")) == 10
    assert XSS in browser.find_element(By.TAG_NAME, "body").text  # the change's reason, shown as text
    assert_no_alert(browser)
    browser.save_screenshot(str(shots / "2-server.png"))


def test_crawl_page_draws_the_history_and_the_priority_table(browser, live_server, data, shots):
    now = timezone.now()
    CrawlSample.objects.bulk_create(
        CrawlSample(at=now - timedelta(minutes=30 - m), states={"init": 300 - 10 * m, "visited": 10 * m}, excluded=0)
        for m in range(30)
    )
    log_in(browser, live_server.url)
    browser.get(f"{live_server.url}/dashboard/crawl/")
    canvas = wait(browser, ec.presence_of_element_located((By.ID, "history-chart")))
    wait(browser, lambda d: d.execute_script("return !!window.historyChart"))
    points = browser.execute_script("return window.historyChart.data.datasets[0].data.map(p => p.x)")
    assert len(points) == 31 and points == sorted(points)  # the samples and the page's own, along a time axis
    assert points[1] - points[0] == 60_000  # a minute apart: the axis is linear in time
    legend = browser.execute_script("return window.historyChart.data.datasets.map(d => d.label)")
    assert "init" in legend and "visited" in legend and "noresponse2" not in legend  # never held a URL
    assert _painted(browser, canvas) > 500, "the history chart drew (almost) nothing"
    now_cells = browser.find_elements(By.CSS_SELECTOR, "#priority td.now a")
    assert [a.text for a in now_cells] == ["a.example"]  # the server's name, not its id
    browser.save_screenshot(str(shots / "5-crawl.png"))


def test_admin_action_disables_a_server(browser, live_server, data, shots):
    log_in(browser, live_server.url)
    browser.get(f"{live_server.url}/admin/crawladmin/server/")
    box = wait(browser, ec.element_to_be_clickable((By.CSS_SELECTOR, f"input.action-select[value='{data.id}']")))
    box.click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("disable")
    browser.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    message = wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
    assert "Disabled 1 server" in message.text
    browser.save_screenshot(str(shots / "3-admin-action.png"))
    assert not Server.objects.get(id=data.id).enabled


def test_a_script_in_a_page_title_is_shown_as_text(browser, live_server, data, shots):
    log_in(browser, live_server.url)
    browser.get(f"{live_server.url}/dashboard/dead-links/{data.id}/")
    title = wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "table.deadlinks .title")))
    assert title.text == XSS
    assert_no_alert(browser)
    assert browser.execute_script("return document.querySelectorAll('table.deadlinks script').length") == 0
    browser.save_screenshot(str(shots / "4-xss-title.png"))
    browser.get(f"{live_server.url}/admin/crawladmin/page/")
    wait(browser, ec.presence_of_element_located((By.ID, "result_list")))
    assert XSS in browser.find_element(By.ID, "result_list").text
    assert_no_alert(browser)
