"""Debian's headless Chromium through Selenium, started one way for every browser test: an explicit driver
path (Selenium Manager, which would download a driver, never runs), a profile of its own removed afterwards,
and the flags that keep it from calling home."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
QUIET = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run")  # fmt: skip


@contextmanager
def headless_chromium(
    *, flags: Sequence[str] = (), page_load_timeout: float = 20, console_log: bool = False
) -> Iterator:
    """A driver of a fresh headless Chromium, quit when the block ends. `flags`: beside QUIET (a window size,
    …); `console_log`: keep the page's console messages for `driver.get_log("browser")`."""
    from selenium import webdriver

    profile = tempfile.mkdtemp(prefix="crawladmin-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*QUIET, f"--user-data-dir={profile}", *flags):
        options.add_argument(flag)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(page_load_timeout)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
