"""The console at scale in a real browser (headless Chromium, the harness of tests/test_browser.py), at
1400 and 400 px: the servers list with 500 servers (natural order, problems first, a search by part of a
name finding one within a second, a bulk pause holding a group's crawl), a heartbeat shown by its name with
its ping URL on its page, the themed admin; axe-core finds no serious or critical violation on them."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from crawlcore.models import Server
from dashboard import cache
from dashboard.groups import groups_ensure
from monitoring.models import ServerMonitor
from monitoring.services.monitors import monitor_add

from .axe import axe_violations
from .test_browser import PASSWORD, By, browser, ec, log_in, shots, wait  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)
WIDTHS = (1400, 400)
N_SERVERS = 500


@pytest.fixture
def console():
    """An operator (staff); 500 monitored servers 127.0.1.1-250 and 127.0.2.1-250 in two groups, two of them
    down; a heartbeat called "nightly backup"."""
    groups_ensure()
    cache.clear()
    user = User.objects.create_user("op", password=PASSWORD, is_staff=True, is_superuser=True)
    user.groups.add(Group.objects.get(name="operator"))
    now = timezone.now()
    Server.objects.bulk_create(
        Server(scheme="http", host=f"127.0.{1 + i // 250}.{1 + i % 250}", port=80, group=f"lab{1 + i // 250}")
        for i in range(N_SERVERS)
    )
    ServerMonitor.objects.bulk_create(
        ServerMonitor(server=s, status="normal", last_check_at=now, interval_s=300) for s in Server.objects.all()
    )
    down = ["127.0.2.200", "127.0.1.77"]
    ServerMonitor.objects.filter(server__host__in=down).update(status="disconnect", status_since=now)
    beat = monitor_add(kind="heartbeat", target="nightly backup", every_s=86400, grace_s=3600).monitor
    ServerMonitor.objects.filter(pk=beat.pk).update(status="normal", last_check_at=now)
    return {"down": down, "heartbeat": beat}


def names(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('table.servers td.name a')).map(a => a.textContent)"
    )


def assert_accessible(driver, where: str) -> None:
    found = axe_violations(driver)
    assert not found, f"{where}: {found}"


def assert_fits(driver, where: str) -> None:
    wide = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 1, f"{where}: the page is {wide} px wider than the window"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_list_of_500_servers_in_natural_order_problems_first_searched_and_paused(
    browser, live_server, console, shots, width  # noqa: F811  (the harness's fixtures)
):
    browser.set_window_size(width, 1000)
    log_in(browser, live_server.url)
    browser.get(f"{live_server.url}/dashboard/?view=list")
    wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "table.servers")))
    shown = names(browser)
    assert len(shown) == 100 and "1–100 of 501 servers" in browser.page_source
    assert shown[:2] == ["http://127.0.1.77", "http://127.0.2.200"]  # the problems first, by number
    assert shown[2:6] == ["http://127.0.1.1", "http://127.0.1.2", "http://127.0.1.3", "http://127.0.1.4"]
    assert shown.index("http://127.0.1.10") > shown.index("http://127.0.1.9")  # not .1, .10, .100
    assert_fits(browser, f"list at {width}")
    browser.save_screenshot(str(shots / f"list-{width}.png"))
    assert_accessible(browser, f"list at {width}")

    box = browser.find_element(By.ID, "grid-q")
    box.clear()
    box.send_keys("0.2.13")
    started = time.monotonic()
    box.submit()
    wait(browser, lambda d: names(d) == ["http://127.0.2.13", "http://127.0.2.130", "http://127.0.2.131",
                                         "http://127.0.2.132", "http://127.0.2.133", "http://127.0.2.134",
                                         "http://127.0.2.135", "http://127.0.2.136", "http://127.0.2.137",
                                         "http://127.0.2.138", "http://127.0.2.139"])  # fmt: skip
    took = time.monotonic() - started
    assert took < 1.0, f"the search took {took:.2f} s"
    assert "q=0.2.13" in browser.current_url and "view=list" in browser.current_url  # bookmarkable

    # A bulk pause of a group holds its crawl (the host-health service's record).
    browser.get(f"{live_server.url}/dashboard/?view=list&group=lab2&q=0.2.13")
    wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "input.selall")))
    browser.find_element(By.CSS_SELECTOR, "input.selall").click()
    assert "11 selected" in browser.find_element(By.ID, "bulk-count").text
    browser.find_element(By.CSS_SELECTOR, "#bulk button[value=pause]").click()
    wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "ul.messages")))
    assert "11 servers paused" in browser.find_element(By.CSS_SELECTOR, "ul.messages").text
    from crawlcore.selectors_health import held_server_ids

    held = set(Server.objects.filter(id__in=held_server_ids()).values_list("host", flat=True))
    assert held == {f"127.0.2.{n}" for n in (13, *range(130, 140))}


@pytest.mark.parametrize("width", WIDTHS)
def test_a_heartbeat_is_shown_by_its_name_with_its_ping_url(browser, live_server, console, shots, width):  # noqa: F811
    browser.set_window_size(width, 1000)
    log_in(browser, live_server.url)
    browser.get(f"{live_server.url}/dashboard/?q=nightly")
    tile = wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "a.tile .origin")))
    assert tile.text == "nightly backup"
    tile.click()
    wait(browser, ec.presence_of_element_located((By.ID, "ping-ok")))
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("nightly backup")
    token = console["heartbeat"].ping_token
    assert browser.find_element(By.ID, "ping-ok").text.endswith(f"/ping/{token}")
    assert "heartbeat://" not in browser.page_source
    assert_fits(browser, f"heartbeat page at {width}")
    browser.save_screenshot(str(shots / f"heartbeat-{width}.png"))
    assert_accessible(browser, f"heartbeat page at {width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_themed_admin_lists_servers_without_an_accessibility_violation(
    browser, live_server, console, shots, width  # noqa: F811
):
    browser.set_window_size(width, 1000)
    log_in(browser, live_server.url)
    browser.get(f"{live_server.url}/admin/monitoring/servermonitor/")
    wait(browser, ec.presence_of_element_located((By.ID, "result_list")))
    assert browser.find_elements(By.CSS_SELECTOR, "span.badge.disconnect")
    header = browser.execute_script("return getComputedStyle(document.getElementById('header')).backgroundColor")
    assert header == "rgb(36, 54, 75)"  # the dashboard's navy
    browser.save_screenshot(str(shots / f"admin-{width}.png"))
    assert_accessible(browser, f"admin servers at {width}")
