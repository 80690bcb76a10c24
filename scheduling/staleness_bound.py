"""A lower bound on mean staleness for a web whose change times are known, given a budget of fetches.

The live benchmark (bench/staleness_live.py) measures staleness as age: a stored copy that stopped being
the live page at time x contributes t − x at time t, a copy still live contributes 0. Any policy, however
clever, refreshes a page only by fetching it, and a fetch at time f gets the version live at f, which
stays fresh until the page's next change. So:

* within one version's life the best moment to fetch is its first instant (the change itself): a fetch
  later in the same version buys nothing the earlier one would not, and costs the same;
* for one page, the least integrated age with exactly n fetches in the window is a small dynamic
  programme over its change times (`page_age_by_fetches`);
* over pages, the least total with at most N fetches in all is a knapsack over those per-page curves
  (`bound_mean_staleness`).

That is a relaxation of every real crawler: fetches are instantaneous, a policy knows the schedule
(an oracle), nothing is spent on HEADs or on the politeness delay, and a server may serve any number
at once. A crawler that made N requests in the window (checks and loads alike) cannot have a mean
staleness below the bound for N: it is the floor the capacity sets, not a figure to reach.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PageTimes:
    """One page in the window [start, end).

    `stale_since`: when the copy held at `start` stopped being live (≤ start: stale already; > start: the
    first change after `start`, the copy is fresh until then; None: it stays live all window).
    `changes`: the page's change times strictly inside (start, end), ascending.
    """

    stale_since: float | None
    changes: Sequence[float]


def _age(since: float | None, a: float, b: float) -> float:
    """∫ age over [a, b] of a copy stale since `since` (0 where it is still live)."""
    if since is None or b <= since or b <= a:
        return 0.0
    lo = max(a, since)
    return ((b - since) ** 2 - (lo - since) ** 2) / 2.0


def page_age_by_fetches(page: PageTimes, *, start: float, end: float) -> list[float]:
    """Least integrated age of the page over [start, end) with exactly 0, 1, … fetches (one list entry
    per count, up to the number of useful fetch moments: `start` and each change)."""
    moments = [start] + [c for c in page.changes if start < c < end]
    # A fetch at moments[i] is fresh until the next change after it.
    fresh_until = []
    for f in moments:
        later = [c for c in page.changes if c > f]
        fresh_until.append(later[0] if later else None)
    n = len(moments)
    inf = math.inf
    # best[k][i]: least age over [start, moments[i]] with k fetches, the last at moments[i].
    best = [[inf] * n for _ in range(n + 1)]
    for i in range(n):
        best[1][i] = _age(page.stale_since, start, moments[i])
    for k in range(2, n + 1):
        for j in range(k - 1, n):
            best[k][j] = min(
                (best[k - 1][i] + _age(fresh_until[i], moments[i], moments[j]) for i in range(k - 2, j)),
                default=inf,
            )
    out = [_age(page.stale_since, start, end)]
    for k in range(1, n + 1):
        out.append(min(best[k][i] + _age(fresh_until[i], moments[i], end) for i in range(n)))
    return out


def bound_mean_staleness(pages: Sequence[PageTimes], *, start: float, end: float, fetches: int) -> float:
    """The least mean staleness (seconds, over pages and the window) any policy with at most `fetches`
    fetches in the window can reach on these pages (see the module docstring)."""
    if not pages or end <= start:
        return 0.0
    budget = max(0, fetches)
    inf = math.inf
    total = [0.0] + [inf] * budget  # total[b]: least summed age of the pages so far with b fetches
    for page in pages:
        curve = page_age_by_fetches(page, start=start, end=end)
        nxt = [inf] * (budget + 1)
        for b, so_far in enumerate(total):
            if so_far == inf:
                continue
            for k, age in enumerate(curve):
                if b + k > budget:
                    break
                if so_far + age < nxt[b + k]:
                    nxt[b + k] = so_far + age
        total = nxt
    return min(total) / (len(pages) * (end - start))
