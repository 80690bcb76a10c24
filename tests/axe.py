"""Accessibility checks in the browser tests: axe-core run in the page through Selenium.

axe.min.js is axe-core 4.14.1 as the npm registry ships it (`npm pack axe-core@4.14.1`), kept in
tests/vendor/axe-core/ with its licence (MPL-2.0): the tests need no network. `axe_violations(driver)` runs it
on the page the driver shows and returns the violations of the impacts asked for (serious and critical by
default), each as {id, impact, help, nodes: [target selector, …]}, so a failing assertion names what to fix.
"""

from __future__ import annotations

from pathlib import Path

AXE_JS = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
IMPACTS = ("serious", "critical")


def axe_violations(driver, *, impacts: tuple[str, ...] = IMPACTS, timeout: float = 30.0) -> list[dict]:
    """Run axe-core on the current page (WCAG 2 A and AA rules and axe's best practices) and return the
    violations of these impacts."""
    if not driver.execute_script("return typeof window.axe === 'object'"):
        driver.execute_script(AXE_JS.read_text(encoding="utf-8"))
    driver.set_script_timeout(timeout)
    result = driver.execute_async_script(
        """
        var done = arguments[arguments.length - 1];
        axe.run(document, {resultTypes: ["violations"]})
          .then(function (r) { done({violations: r.violations}); })
          .catch(function (e) { done({error: String(e)}); });
        """
    )
    if "error" in result:
        raise AssertionError(f"axe-core failed on {driver.current_url}: {result['error']}")
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [", ".join(map(str, n.get("target", []))) for n in v["nodes"]][:10],
        }
        for v in result["violations"]
        if v.get("impact") in impacts
    ]
