"""One run of the analyzer (`manage.py analyze`): analyse the pages not analysed yet, give the active foreign
domains an address when national IP ranges are configured, and report (seed 001's appendix)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from django.conf import settings

from . import resolve
from .selectors import analysis_report
from .services import domains_resolve, national_networks, pages_analyse, pages_pending

# A progress display for one stage ("analyse", "resolve") with this total (None: unknown): a context whose
# value is called with each batch's count. The command draws it with tqdm.
Bars = Callable[[str, int | None], AbstractContextManager[Callable[[int], object]]]


def _no_bars(stage: str, total: int | None) -> AbstractContextManager[Callable[[int], object]]:
    return nullcontext(lambda n: None)


def analysis_run(
    *,
    analyse: bool = True,
    reanalyse: bool = False,
    batch_size: int = 1000,
    limit: int | None = None,
    resolve_domains: bool = True,
    bars: Bars = _no_bars,
) -> dict:
    """Analyse (unless `analyse` is False), resolve, and return analysis_report's report, with what this
    run did under "run" when it did anything."""
    national, networks = settings.ANALYZER_NATIONAL_TLD, national_networks()
    run: dict = {}
    if analyse:
        pending = pages_pending(reanalyse=reanalyse).count()
        if limit is not None:
            pending = min(pending, limit)
        with bars("analyse", pending) as advance:
            outcome = pages_analyse(batch_size=batch_size, reanalyse=reanalyse, limit=limit, progress=advance)
        run = {"analyzed": outcome.pages, "failed": outcome.failed, "new_domains": outcome.new_domains,
               "seconds": round(outcome.seconds, 3)}
        if networks and resolve_domains:
            with bars("resolve", None) as advance:
                resolved = domains_resolve(
                    resolver=resolve.system_resolver, national_tld=national, networks=networks, progress=advance
                )
            run["resolved"] = {"asked": resolved.asked, "from_crawl": resolved.from_crawl, "found": resolved.found}
    report = analysis_report(national_tld=national, networks=networks)
    if run:
        report["run"] = run
    return report
