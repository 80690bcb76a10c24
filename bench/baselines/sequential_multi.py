"""Seed 001's baseline: the *multi-process sequential* web robot (§II.1.2, figure 2.1; §IV.2.2).

The paper's baseline runs its loader and extractor as several processes over in-memory buffers (ToLoad,
ToExtract, Extracted, NewExtracted) and a uniqueness checker that keeps only new URLs. Its loader "must
itself re-check the state changes of the active URLs and the dead-link URLs, and re-load and re-extract
them" (§IV.2.2): what the multi-agent robot hands to its active and inactive scan agents. So here:

- ``procs`` loader processes share one ToLoad queue. Each, in sequence, takes its next piece of work:
  a re-check that is due among the URLs *it* met, or one new URL from ToLoad (robots.txt, GET, and the
  page handed to ToExtract). In which order is ``order``: ``interleave`` (the default, our reading
  of the paper's loader, which "repeatedly checks, loads and extracts" the active and dead-link URLs
  besides its new ones: a due re-check and a new URL take turns while both are waiting) or
  ``recheck-first`` (every due re-check before any new URL, the earlier form of this baseline). No
  process waits for another; none has a helper.
- ``extractors`` extractor processes (figure 2.1) share one ToExtract queue: each takes a loaded page,
  extracts its links and sends them to the parent (Extracted). With ``extractors=0`` the loader extracts
  in line instead (the earlier form of this baseline).
- The parent is the uniqueness checker: it drops URLs already seen and feeds the rest to ToLoad.
- Re-checks follow our life-cycle and our timings (``crawler.lifecycle``, ``crawler.recheck``): a Visited
  URL is re-checked (HEAD, then a conditional GET when needed) ``revisit_after`` seconds after its last
  check and re-loaded and re-extracted when it changed; a URL without a valid answer is re-tried after
  ``nr1_backoff`` (NoResponse1) and ``nr2_backoff`` (NoResponse2), then dropped as Dead; one that answers
  is loaded. Every attempt on a silent host waits out the timeouts, in the loader's own time.
- robots.txt is read once per server; a silent one is remembered for ``robots_retry`` seconds, as our
  load agent does (CRAWL_ROBOTS_RETRY), so the baseline is not charged for a memo we have and it lacks.

Only the pure parts our agents use (fetcher, parser, canonicaliser, robots rules, re-check logic): no
Django, no Celery, no database (the paper's buffers were in memory). The HTTP client is ``engine`` (the
libcurl engine our agents use by default, ``crawler.engine.EngineFetcher``) or ``threads`` (requests,
``crawler.fetch.Fetcher``): the same names as CRAWL_FETCH_ENGINE, so both robots can run the same client.
Every process reports its own CPU seconds when it exits.

    python -m bench.baselines.sequential_multi --seconds 60 --procs 4 --extractors 2 http://127.0.0.60:8000/ …
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue as queue_mod
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

from crawler.engine import EngineFetcher
from crawler.fetch import Fetcher
from crawler.http import FetchPolicy, FetchResult
from crawler.lifecycle import Event, event_for_fetch
from crawler.parse import extract, is_html
from crawler.recheck import Finding, Known, Outcome, Recheck, Reply, body_checksum
from crawler.robots import RobotsRules, product_token, rules_from_response
from crawler.urlnorm import UrlError, canonicalize

__all__ = ["ENGINES", "Action", "Loader", "Timings", "links_of", "run"]

MAX_LINKS_PER_PAGE = 500
_IDLE_WAIT = 0.05  # seconds a loader waits on an empty ToLoad before looking at its re-checks again
ENGINES = ("engine", "threads")  # as CRAWL_FETCH_ENGINE: the libcurl engine, or requests


def make_fetcher(policy: FetchPolicy, engine: str) -> Fetcher | EngineFetcher:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}")
    return EngineFetcher(policy) if engine == "engine" else Fetcher(policy)


def cpu_self() -> float:
    """User + system CPU seconds of this process so far."""
    t = os.times()
    return t.user + t.system


def links_of(url: str, depth: int, body: bytes, content_type: str | None) -> list[tuple[str, int]]:
    """The extractor's work on one loaded HTML page: the links to follow, one level deeper."""
    page = extract(body, url, content_type=content_type)
    if page.nofollow:
        return []
    return [(link.url, depth + 1) for link in page.links[:MAX_LINKS_PER_PAGE] if not link.resource]


@dataclass(frozen=True)
class Timings:
    """Our agents' settings, as the baseline uses them (seconds)."""

    connect: float = 15.0
    header: float = 10.0
    body: float = 20.0
    revisit_after: float = 3600.0  # CRAWL_REVISIT_AFTER
    nr1_backoff: float = 3600.0  # CRAWL_NR1_BACKOFF
    nr2_backoff: float = 21600.0  # CRAWL_NR2_BACKOFF
    robots_retry: float = 600.0  # CRAWL_ROBOTS_RETRY
    max_depth: int = 25


@dataclass
class Action:
    """One thing a loader did, sent to the parent."""

    t: float  # time.time() when it finished
    kind: str  # "load" (a new URL) | "active" (re-check of a Visited URL) | "inactive" (of a failing one)
    url: str
    outcome: str  # load: visited | failed | excluded; re-checks: Outcome value, "+reload" when re-loaded
    collected: bool  # this action was the URL's first successful load
    waited: float  # seconds spent in requests that got no answer
    requests: int


@dataclass
class _Watch:
    """A URL this loader met and must keep an eye on."""

    url: str
    state: str  # "visited" | "nr1" | "nr2"
    due: float  # time.monotonic()
    depth: int
    known: Known


class Loader:
    """One process of the sequential robot: `load()` and `recheck()` each do one unit of its sequence and say
    what they did. With `to_extract` (a queue), a loaded page goes to the extractor processes instead of being
    extracted here, and only a redirect's target comes back as a link."""

    def __init__(self, policy: FetchPolicy, timings: Timings, *, engine: str = "threads", to_extract=None) -> None:  # noqa: ANN001
        self.timings = timings
        self.fetcher = make_fetcher(policy, engine)
        self.to_extract = to_extract
        self.agent = product_token(policy.user_agent)
        self._robots: dict[str, RobotsRules] = {}
        self._robots_silent: dict[str, float] = {}  # origin -> monotonic time until which it counts as down
        self.watch: list[_Watch] = []
        self._collected: set[str] = set()

    def close(self) -> None:
        self.fetcher.close()

    # -- the sequence ------------------------------------------------------------------------------

    def due_recheck(self, now: float) -> _Watch | None:
        """The most overdue URL among those this loader met, or None."""
        best = None
        for w in self.watch:
            if w.due <= now and (best is None or w.due < best.due):
                best = w
        return best

    def load(self, url: str, depth: int) -> tuple[Action, list[tuple[str, int]]]:
        """A new URL from ToLoad: robots.txt, GET, extract. Returns the action and the links found."""
        waited, requests = 0.0, 0
        rules, w, r = self._rules(url)
        waited, requests = waited + w, requests + r
        if isinstance(rules, RobotsRules) and not rules.allowed(url, self.agent):
            return Action(time.time(), "load", url, "excluded", False, waited, requests), []
        result = None if rules is None else self.fetcher.fetch(url)
        if result is not None:
            requests += 1
            waited += _waited(result)
        event = event_for_fetch(result.status if result else None, has_retry_after=False)
        if event == Event.FETCHED:
            links = self._keep(url, depth, result)
            first = url not in self._collected
            self._collected.add(url)
            return Action(time.time(), "load", url, "visited", first, waited, requests), links
        if event != Event.GONE:
            self.watch.append(
                _Watch(url, "nr1", time.monotonic() + self.timings.nr1_backoff, depth, Known(url, loaded=False))
            )
        return Action(time.time(), "load", url, "failed", False, waited, requests), []

    def recheck(self, w: _Watch) -> tuple[Action, list[tuple[str, int]]]:
        """Re-check one URL in line; re-load and re-extract it when it changed or came back."""
        kind = "active" if w.state == "visited" else "inactive"
        waited, requests = 0.0, 0
        rules, wt, r = self._rules(w.url)
        waited, requests = waited + wt, requests + r
        if rules is None:
            finding = Finding(Outcome.NO_RESPONSE, "robots.txt silent")
        else:
            finding, wt, r, got = self._probe(w.known)
            waited, requests = waited + wt, requests + r
        links: list[tuple[str, int]] = []
        outcome = finding.outcome.value
        collected = False
        if finding.outcome == Outcome.CHANGED:
            self.watch.remove(w)
            result = got if got is not None and got.method == "GET" and got.status == 200 else self.fetcher.fetch(w.url)
            if result is not got:
                requests += 1
                waited += _waited(result)
            if event_for_fetch(result.status, has_retry_after=False) == Event.FETCHED:
                links = self._keep(w.url, w.depth, result)
                collected = w.url not in self._collected
                self._collected.add(w.url)
                outcome += "+reload"
            else:
                self.watch.append(_Watch(w.url, "nr1", time.monotonic() + self.timings.nr1_backoff, w.depth, w.known))
        elif finding.outcome == Outcome.UNCHANGED:
            w.state, w.due = "visited", time.monotonic() + self.timings.revisit_after
        elif finding.outcome == Outcome.NO_RESPONSE:
            if w.state == "nr2":
                self.watch.remove(w)  # Dead
                outcome = "dead"
            else:
                nr2 = w.state == "nr1"
                w.state = "nr2" if nr2 else "nr1"
                w.due = time.monotonic() + (self.timings.nr2_backoff if nr2 else self.timings.nr1_backoff)
        elif finding.outcome == Outcome.GONE:
            self.watch.remove(w)
        else:  # BACK_OFF: ask again later, no move
            w.due = time.monotonic() + self.timings.revisit_after
        return Action(time.time(), kind, w.url, outcome, collected, waited, requests), links

    # -- parts -------------------------------------------------------------------------------------

    def _probe(self, known: Known) -> tuple[Finding, float, int, FetchResult | None]:
        check = Recheck(known)
        waited, requests, result = 0.0, 0, None
        for _ in range(3):  # HEAD, then at most one GET (crawler.recheck.MAX_REQUESTS)
            result = self.fetcher.fetch(known.url, method=check.request.method, headers=check.request.headers)
            requests += 1
            waited += _waited(result)
            nxt = check.feed(Reply(result.status, result.headers, result.body if result.method == "GET" else None))
            if isinstance(nxt, Finding):
                return nxt, waited, requests, result
        return Finding(Outcome.NO_RESPONSE, "too many probes"), waited, requests, result

    def _keep(self, url: str, depth: int, result: FetchResult) -> list[tuple[str, int]]:
        """Remember a loaded page for the active re-check; its links (or a redirect's target)."""
        headers = result.headers
        length = headers.get("content-length")
        known = Known(
            url,
            etag=headers.get("etag", ""),
            last_modified=headers.get("last-modified", ""),
            content_length=int(length) if length and length.isdigit() else None,
            checksum=body_checksum(result.body),
        )
        self.watch.append(_Watch(url, "visited", time.monotonic() + self.timings.revisit_after, depth, known))
        status = result.status or 0
        location = headers.get("location")
        if 300 <= status < 400 and location:
            try:
                return [(canonicalize(location, base=url), depth)]
            except UrlError:
                return []
        if not (200 <= status < 300) or depth >= self.timings.max_depth or not is_html(headers.get("content-type")):
            return []
        if self.to_extract is not None:
            self.to_extract.put((url, depth, result.body, headers.get("content-type")))
            return []
        return links_of(url, depth, result.body, headers.get("content-type"))

    def _rules(self, url: str) -> tuple[RobotsRules | None, float, int]:
        """(rules, seconds waited, requests); rules None: robots.txt is silent, the server counts as down."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin in self._robots:
            return self._robots[origin], 0.0, 0
        if self._robots_silent.get(origin, 0.0) > time.monotonic():
            return None, 0.0, 0
        result = self.fetcher.fetch(f"{origin}/robots.txt")
        if result.status is None or result.status >= 500:
            self._robots_silent[origin] = time.monotonic() + self.timings.robots_retry
            return None, _waited(result), 1
        rules = rules_from_response(result.status, result.body)
        self._robots[origin] = rules
        return rules, 0.0, 1


def _waited(result: FetchResult) -> float:
    return result.timings.total_ms / 1000 if result.status is None else 0.0


# --------------------------------------------------------------------------------------------------
# The processes


ORDERS = ("interleave", "recheck-first")


@dataclass(frozen=True)
class Shared:
    """The queues and events every process of the robot holds (made by `run`)."""

    to_load: object
    to_extract: object | None
    out: object
    go: object
    stop: object


def _loader_main(  # noqa: PLR0913
    i: int, policy: FetchPolicy, timings: Timings, q: Shared, max_actions: int, order: str, engine: str
) -> None:
    loader = Loader(policy, timings, engine=engine, to_extract=q.to_extract)
    q.out.put(("ready", None))
    q.go.wait(60)
    last_was_recheck = False
    try:
        for _ in range(max_actions):  # bounded; stop ends it first
            if q.stop.is_set():
                break
            w = loader.due_recheck(time.monotonic())
            new = None
            if w is None or (order == "interleave" and last_was_recheck):
                try:  # a new URL's turn (or nothing is due): wait briefly only when there is no re-check to do
                    new = q.to_load.get(timeout=_IDLE_WAIT) if w is None else q.to_load.get_nowait()
                except queue_mod.Empty:
                    if w is None:
                        continue
            if new is not None:
                action, links = loader.load(*new)
                last_was_recheck = False
            else:
                action, links = loader.recheck(w)
                last_was_recheck = True
            q.out.put(("action", (asdict(action), links)))
    finally:
        loader.close()
        q.out.put(("exit", (f"loader-{i}", cpu_self())))


def _extractor_main(i: int, q: Shared, max_jobs: int) -> None:
    """An extractor process (figure 2.1): loaded pages from ToExtract, their links to the parent."""
    q.out.put(("ready", None))
    q.go.wait(60)
    try:
        for _ in range(max_jobs):  # bounded; stop ends it first
            if q.stop.is_set():
                break
            try:
                job = q.to_extract.get(timeout=_IDLE_WAIT)
            except queue_mod.Empty:
                continue
            q.out.put(("links", links_of(*job)))
    finally:
        q.out.put(("exit", (f"extractor-{i}", cpu_self())))


@dataclass
class Report:
    started_at: float
    seconds: float
    procs: int
    actions: list[dict] = field(default_factory=list)
    queued: int = 0  # URLs the uniqueness checker let through to ToLoad
    order: str = "interleave"
    extractors: int = 0
    engine: str = "threads"
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds of each process, the parent's included

    def to_json(self) -> dict:
        kinds = Counter(a["kind"] for a in self.actions)
        outcomes = Counter(f"{a['kind']}:{a['outcome']}" for a in self.actions)
        collected = [a["t"] - self.started_at for a in self.actions if a["collected"]]
        return {
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "procs": self.procs,
            "extractors": self.extractors,
            "engine": self.engine,
            "order": self.order,
            "queued": self.queued,
            "actions": dict(kinds),
            "outcomes": dict(outcomes),
            "waited": {k: round(sum(a["waited"] for a in self.actions if a["kind"] == k), 3) for k in kinds},
            "requests": sum(a["requests"] for a in self.actions),
            "cpu_seconds": {k: round(v, 3) for k, v in self.cpu.items()},
            "collected": sorted(round(t, 4) for t in collected),
        }


def run(  # noqa: PLR0913
    seeds: list[str],
    *,
    seconds: float,
    procs: int,
    policy: FetchPolicy,
    timings: Timings,
    max_actions: int = 1_000_000,
    order: str = "interleave",
    extractors: int = 0,
    engine: str = "threads",
) -> Report:
    """Run the robot for `seconds` (after its processes are up) and report what it did."""
    ctx = mp.get_context("spawn")  # the caller may hold threads (a test web): never fork them
    q = Shared(ctx.Queue(), ctx.Queue() if extractors else None, ctx.Queue(), ctx.Event(), ctx.Event())
    workers = [
        ctx.Process(target=_loader_main, args=(i, policy, timings, q, max_actions, order, engine), daemon=True)
        for i in range(1, procs + 1)
    ] + [ctx.Process(target=_extractor_main, args=(i, q, max_actions), daemon=True) for i in range(1, extractors + 1)]
    for p in workers:
        p.start()
    for _ in workers:
        kind, _payload = q.out.get(timeout=120)
        assert kind == "ready", kind
    seen: set[str] = set()
    for seed in seeds:
        url = canonicalize(seed)
        if url not in seen:
            seen.add(url)
            q.to_load.put((url, 0))
    report = Report(
        started_at=time.time(), seconds=0.0, procs=procs, queued=len(seen), order=order,
        extractors=extractors, engine=engine,
    )  # fmt: skip
    t0 = time.monotonic()
    q.go.set()
    _collect(report, q, seen, seconds, t0, len(workers))
    report.seconds = time.monotonic() - t0
    for p in workers:
        p.join(5)
        if p.is_alive():
            p.terminate()
            p.join(5)
    for queue in (q.to_load, q.to_extract):
        if queue is not None:
            queue.cancel_join_thread()
    report.cpu["parent"] = cpu_self()
    return report


def _collect(report: Report, q: Shared, seen: set[str], seconds: float, t0: float, processes: int) -> None:
    """The parent's loop: the uniqueness checker, and the actions in the time budget."""
    exited = 0
    while exited < processes:  # bounded: after `seconds`, stop is set and every process exits after its step
        if not q.stop.is_set() and time.monotonic() - t0 >= seconds:
            q.stop.set()
        try:
            kind, payload = q.out.get(timeout=0.2)
        except queue_mod.Empty:
            if q.stop.is_set() and time.monotonic() - t0 > seconds + 120:
                break  # a process stuck past every timeout: leave it to terminate()
            continue
        if kind == "exit":
            exited += 1
            role, cpu = payload
            report.cpu[role] = cpu
            continue
        if kind == "action":
            action, links = payload
            if action["t"] - report.started_at <= seconds:
                report.actions.append(action)
        else:  # "links", from an extractor
            links = payload
        for url, depth in links:  # the uniqueness checker: only new URLs reach ToLoad
            if url not in seen:
                seen.add(url)
                q.to_load.put((url, depth))
                report.queued += 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.baselines.sequential_multi", description=__doc__.split("\n\n")[0])
    p.add_argument("seeds", nargs="+")
    p.add_argument("--seconds", type=float, required=True, help="time budget")
    p.add_argument("--procs", type=int, default=4, help="loader processes")
    p.add_argument("--connect-timeout", type=float, default=15.0)
    p.add_argument("--header-timeout", type=float, default=10.0)
    p.add_argument("--body-timeout", type=float, default=20.0)
    p.add_argument("--revisit-after", type=float, default=3600.0, help="as CRAWL_REVISIT_AFTER")
    p.add_argument("--nr1-backoff", type=float, default=3600.0, help="as CRAWL_NR1_BACKOFF")
    p.add_argument("--nr2-backoff", type=float, default=21600.0, help="as CRAWL_NR2_BACKOFF")
    p.add_argument("--robots-retry", type=float, default=600.0, help="as CRAWL_ROBOTS_RETRY")
    p.add_argument("--user-agent", default="crawladmin/bench-sequential-multi")
    p.add_argument(
        "--order",
        choices=ORDERS,
        default="interleave",
        help="a due re-check and a new URL: in turns, or re-checks first",
    )
    p.add_argument("--extractors", type=int, default=0, help="extractor processes (0: the loaders extract in line)")
    p.add_argument("--engine", choices=ENGINES, default="engine", help="HTTP client, as CRAWL_FETCH_ENGINE")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.procs < 1 or args.seconds <= 0 or args.extractors < 0:
        raise SystemExit("need --procs >= 1, --extractors >= 0 and --seconds > 0")
    policy = FetchPolicy(
        connect_timeout=args.connect_timeout,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        user_agent=args.user_agent,
    )
    timings = Timings(
        connect=args.connect_timeout,
        header=args.header_timeout,
        body=args.body_timeout,
        revisit_after=args.revisit_after,
        nr1_backoff=args.nr1_backoff,
        nr2_backoff=args.nr2_backoff,
        robots_retry=args.robots_retry,
    )
    report = run(
        args.seeds, seconds=args.seconds, procs=args.procs, policy=policy, timings=timings, order=args.order,
        extractors=args.extractors, engine=args.engine,
    )  # fmt: skip
    json.dump(report.to_json(), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
