"""Headless Chromium, driven through Playwright, for the pages that need a browser (crawler.render_need).

Why Playwright rather than a DevTools-protocol client of our own: its request routing (`context.route`)
pauses every request the page makes — documents, frames, scripts, images, XHR and fetch, each redirect hop
and the requests of workers — and lets us answer it ourselves. So the browser sends nothing on its own:
each request is handed to the caller's handler, which fetches it with the crawler's own guarded client
(the private-address guard, the job's scope, robots.txt, the server's politeness) and the answer is given
to the browser. A request the routing would ever miss still cannot leave: Chromium is started with a
proxy on a closed loopback port for every destination, loopback included, so it fails instead. The wheel
carries its driver; the browser is the system's Chromium (`executable_path`), no download.

One `Browser` is one Chromium process and is used by one thread (Playwright's sync API is bound to the
thread that started it). `RenderPool` keeps `browsers` of them, each on its own thread, and bounds each
render in time: a render past its deadline has its Chromium killed, the page fails like a fetch that got
no answer, and the thread starts a new browser. A browser is also replaced after `pages_per_browser`
pages and when its processes' memory passes `browser_memory_mb`. Every page gets a fresh browser context:
no cookies, storage or cache carried from one page (or server) to the next.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def find_chromium(explicit: str = "") -> str:
    """The Chromium executable to use ("" when none is installed)."""
    for path in (explicit,) if explicit else CHROMIUM_PATHS:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which("chromium")
    return found or ""


@dataclass(frozen=True)
class RenderBounds:
    page_seconds: float = 20.0  # one page: navigation, scripts and settling, start to end
    pages_per_browser: int = 100  # then the browser is restarted (memory creep, leaked state)
    browser_memory_mb: int = 1024  # a browser whose processes hold more (RSS) is restarted after its page
    browsers: int = 1  # browsers (threads) per worker process
    settle_ms: int = 1500  # after `load`, how long to wait for the network to go quiet


@dataclass(frozen=True)
class SubRequest:
    """A request the page wants to make, as the handler sees it."""

    url: str
    method: str
    headers: dict[str, str]
    kind: str  # Playwright's resource type: document, script, image, xhr, fetch…
    navigation: bool  # a document for a frame (the page itself, a frame, a navigation away)
    main: bool  # the page's own document: the first navigation of the main frame


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


# A handler answers a request, or refuses it with a short reason (which the browser sees as blocked).
Handler = Callable[[SubRequest], "Answer | str"]


@dataclass
class Rendered:
    url: str
    html: str  # the rendered DOM, serialised
    title: str
    main: Answer | None  # the answer given for the page's own document
    requests: int = 0  # requests the page made (answered or refused)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (url, reason)
    ms: float = 0.0


class RenderFailed(Exception):
    """The page could not be rendered: the browser crashed or hung, or the document got no answer."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason[:200]


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            out = [int(p) for p in f.read().split()]
    except OSError:
        return []
    for child in list(out):
        out.extend(_children(child))
    return out


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            fields = f.read().split()
        # Resident less shared: Chromium's processes share most of their pages, which would count many times.
        return (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _find_marked(token: str) -> int | None:
    """The pid of the Chromium started with our marker switch (Playwright does not tell it)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    return int(name)
        except OSError:
            continue
    return None


class Browser:
    """One Chromium process, used by the thread that made it."""

    def __init__(self, executable: str, bounds: RenderBounds, *, user_agent: str = "") -> None:
        from playwright.sync_api import sync_playwright  # the render agent's only; other workers never load it

        self.bounds = bounds
        self.pages = 0
        self._token = f"--crawladmin-render={secrets.token_hex(8)}"
        self._pw = sync_playwright().start()
        try:
            self._browser = self._pw.chromium.launch(
                executable_path=executable,
                headless=True,
                args=[
                    self._token,
                    # Nothing leaves but through the route handler: any request it would miss goes to a closed
                    # port ("<-loopback>" takes loopback off the default bypass list).
                    "--proxy-server=socks5://127.0.0.1:9",
                    "--proxy-bypass-list=<-loopback>",
                    # WebRTC's UDP does not go through a proxy: none but proxied; and no name is looked up.
                    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
                    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
                    "--host-resolver-rules=MAP * ~NOTFOUND",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                    "--disable-dev-shm-usage",
                    "--disable-features=Translate,OptimizationHints,MediaRouter",
                ],
                timeout=30_000,
            )
        except Exception:
            self._pw.stop()
            raise
        self.user_agent = user_agent
        self.pid = _find_marked(self._token)
        self._calls = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="render-fetch")

    def rss_bytes(self) -> int:
        if self.pid is None:
            return 0
        return sum(_rss_bytes(p) for p in (self.pid, *_children(self.pid)))

    def kill(self) -> None:
        """Kill the Chromium process tree at once (a hung browser; called from another thread)."""
        if self.pid is None:
            return
        for pid in (*_children(self.pid), self.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        self._calls.shutdown(wait=False)
        try:
            self._browser.close()
        except Exception:  # already dead: nothing to close
            pass
        try:
            self._pw.stop()
        except Exception:
            pass
        self.kill()

    def worn(self) -> bool:
        """Due for a restart: enough pages, or too much memory."""
        if self.pages >= self.bounds.pages_per_browser:
            return True
        return self.rss_bytes() > self.bounds.browser_memory_mb * 1024 * 1024

    def render(self, url: str, handler: Handler) -> Rendered:
        from playwright.sync_api import Error as PlaywrightError

        self.pages += 1
        started = time.monotonic()
        out = Rendered(url=url, html="", title="", main=None)
        context = self._browser.new_context(
            service_workers="block",  # a service worker would fetch outside the page's routing
            accept_downloads=False,
            user_agent=self.user_agent or None,
            java_script_enabled=True,
        )
        try:
            page = context.new_page()
            state = {"main_done": False}

            def on_route(route) -> None:
                request = route.request
                if request.url.startswith(("data:", "blob:")):
                    route.continue_()  # in the page itself: no network
                    return
                navigation = request.is_navigation_request()
                main = navigation and request.frame == page.main_frame and not state["main_done"]
                sub = SubRequest(
                    url=request.url,
                    method=request.method,
                    headers=dict(request.headers),
                    kind=request.resource_type,
                    navigation=navigation,
                    main=main,
                )
                out.requests += 1
                try:
                    # On a thread of its own: this one runs Playwright's event loop, where the handler's
                    # blocking work (Django refuses database calls under a running loop) does not belong.
                    answer = self._calls.submit(handler, sub).result(timeout=self.bounds.page_seconds)
                except Exception as exc:  # the handler's fault must not hang the page: refused
                    log.exception("render handler failed for %s", request.url[:200])
                    answer = f"handler error: {type(exc).__name__}"
                if isinstance(answer, str):
                    out.refused.append((request.url, answer))
                    route.abort("blockedbyclient")
                    return
                if main:
                    out.main = answer
                    if not 300 <= answer.status < 400:
                        state["main_done"] = True
                headers = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_HEADERS}
                route.fulfill(status=answer.status, headers=headers, body=answer.body)

            context.route("**/*", on_route)
            # WebSockets are not requests the routing above sees: each is closed before it connects.
            context.route_web_socket("**/*", lambda ws: ws.close())
            timeout_ms = self.bounds.page_seconds * 1000
            try:
                page.goto(url, wait_until="load", timeout=timeout_ms)
            except PlaywrightError as exc:
                if out.main is None or not page.url.startswith("http"):
                    raise RenderFailed(f"navigation failed: {str(exc).splitlines()[0]}") from exc
            left = timeout_ms - (time.monotonic() - started) * 1000
            if left > 0:
                try:
                    page.wait_for_load_state("networkidle", timeout=min(self.bounds.settle_ms, left))
                except PlaywrightError:
                    pass  # still busy (polling, a long request): what is there by now is the DOM
            out.html = page.content()
            out.title = page.title()
        except RenderFailed:
            raise
        except PlaywrightError as exc:
            raise RenderFailed(f"browser: {str(exc).splitlines()[0]}") from exc
        finally:
            try:
                context.close()
            except Exception:
                pass
        out.ms = (time.monotonic() - started) * 1000
        return out


# Headers the browser must not be given back as they came: the body we hand it is whole and decoded.
_HOP_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length", "connection", "keep-alive"})


HANG_MARGIN = 10.0  # seconds past a page's bound before its browser is taken for hung


@dataclass
class _Job:
    url: str
    handler: Handler
    future: concurrent.futures.Future
    worker: _Worker | None = None


class _Worker(threading.Thread):
    def __init__(self, pool: RenderPool, n: int) -> None:
        super().__init__(name=f"render-browser-{n}", daemon=True)
        self.pool = pool
        self.browser: Browser | None = None

    def run(self) -> None:
        while True:
            job = self.pool._jobs.get()
            if job is None:
                break
            if not job.future.set_running_or_notify_cancel():
                continue
            job.worker = self
            try:
                job.future.set_result(self._render(job))
            except BaseException as exc:
                job.future.set_exception(exc if isinstance(exc, Exception) else RenderFailed(repr(exc)))
        self._drop()

    def _render(self, job: _Job) -> Rendered:
        if self.browser is None:
            try:
                self.browser = Browser(self.pool.executable, self.pool.bounds, user_agent=self.pool.user_agent)
            except Exception as exc:
                raise RenderFailed(f"browser did not start: {str(exc).splitlines()[0] if str(exc) else exc!r}") from exc
        try:
            rendered = self.browser.render(job.url, job.handler)
        except RenderFailed:
            self._drop()  # crashed, killed or confused: the next page gets a new browser
            raise
        if self.browser.worn():
            self._drop()
        return rendered

    def _drop(self) -> None:
        if self.browser is not None:
            self.browser.close()
            self.browser = None


class RenderPool:
    """`bounds.browsers` browsers, each on a thread of its own; render() is safe from any thread."""

    def __init__(self, executable: str, bounds: RenderBounds, *, user_agent: str = "") -> None:
        self.executable = executable
        self.bounds = bounds
        self.user_agent = user_agent
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._workers = [_Worker(self, n) for n in range(max(1, bounds.browsers))]
        for worker in self._workers:
            worker.start()

    def render(self, url: str, handler: Handler, *, queue_wait: float = 120.0) -> Rendered:
        """Render `url`, every request answered by `handler`. Raises RenderFailed when the page is not done
        within the bounds (its browser then killed) or no browser was free within `queue_wait` seconds."""
        job = _Job(url, handler, concurrent.futures.Future())
        self._jobs.put(job)
        deadline = time.monotonic() + queue_wait
        while not job.future.running() and not job.future.done():
            if time.monotonic() > deadline:
                if job.future.cancel():
                    raise RenderFailed("no browser free")
                break
            time.sleep(0.02)
        try:
            # The page's own bound, and some for starting a browser and closing its context. A page's script
            # that never yields holds the DOM's serialisation past its navigation's timeout: this kills it.
            return job.future.result(timeout=self.bounds.page_seconds + HANG_MARGIN)
        except concurrent.futures.TimeoutError:
            worker = job.worker
            if worker is not None and worker.browser is not None:
                log.warning("render of %s hung past its bound: killing its browser", url[:200])
                worker.browser.kill()
            raise RenderFailed("timed out: browser killed") from None

    def close(self) -> None:
        for _ in self._workers:
            self._jobs.put(None)
        for worker in self._workers:
            worker.join(timeout=10)
