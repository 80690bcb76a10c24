"""`python manage.py demo`: the embedded default end to end, for a newcomer on a fresh machine.

Starts the bundled local test web, crawls it, prints the summary, puts the test web's servers under
monitoring, ranks and analyses the crawled pages, then serves the dashboard and the admin with a freshly
generated password printed once. While it serves, the test web stays up and an embedded monitor checks
its servers every DEMO_CHECK_INTERVAL seconds, so the dashboard shows live data: stop a server with
`python manage.py testweb down 127.0.0.10` from another terminal (`up` to start it again) and its tile
turns amber, then red. The same loop sends the alerts those changes cause, as beat does in a cluster:
`--channel URL` (or a channel added from another terminal) receives the "down" within a minute. The demo
lets alerts reach loopback (127.0.0.0/8), where its own test web and a local receiver live, and says so.

One demo per data directory (crawladmin.demo_control): a second one is refused before it touches the
database, as is an --addr whose port is taken.
"""

from __future__ import annotations

import io
import os
import secrets
import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from alerts.services.channels import ChannelError, channel_add
from crawladmin.demo_control import DemoBusy, demo_lock, down_watcher, port_problem
from crawladmin.live_monitor import embedded_monitor
from dashboard.services import status_page_ensure
from monitoring.services.history import load_profiles_build, rollups_build
from ranking.services import rank_crawl
from testweb import SiteSpec, TestWebServer

DEMO_CHECK_ROUNDS = 3
# Short, so a newcomer sees a server go amber then red within a minute (the default is five minutes).
DEMO_CHECK_INTERVAL = 10.0
# Short, so the "down" of `testweb down` reaches a channel within a minute (the default is a minute).
DEMO_GROUP_WINDOW = 10.0
DEMO_PORT = 8090  # fixed, so a second demo finds its URLs in the database and resumes


def _test_web() -> TestWebServer:
    try:
        return TestWebServer(SiteSpec(), port=DEMO_PORT).start()
    except OSError:
        return TestWebServer(SiteSpec()).start()  # the port is taken: any free one


def allowed_hosts_hint(addr: str) -> str | None:
    """What to set when the demo serves on an address its requests will not name (0.0.0.0, a LAN
    address): Django answers a Host header outside DJANGO_ALLOWED_HOSTS with a bare 400."""
    host = addr.rpartition(":")[0].strip("[]") or "127.0.0.1"
    allowed = [h.strip("[]") for h in settings.ALLOWED_HOSTS]
    if "*" in allowed or host in allowed:
        return None
    return (
        f"note: Django answers only requests for {', '.join(settings.ALLOWED_HOSTS)} (DJANGO_ALLOWED_HOSTS); "
        f"to open the demo by another name or address, start it with DJANGO_ALLOWED_HOSTS=that-name,localhost "
        "(a comma list), or every other request gets \"Bad Request (400)\""
    )


class Command(BaseCommand):
    help = "Crawl the bundled local test web in the embedded mode, then serve the admin."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--addr", default="127.0.0.1:8000", help="Where to serve the admin")
        parser.add_argument("--no-serve", action="store_true", help="Stop after the crawl and the summary")
        parser.add_argument("--json", action="store_true", help="Print the crawl summary as JSON")
        parser.add_argument(
            "--channel",
            default="",
            metavar="URL",
            help="send the demo servers' down and up alerts here (an Apprise URL, e.g. json://127.0.0.1:9000/)",
        )

    def handle(self, *args, **opts) -> None:
        if not settings.CELERY_EMBEDDED:
            raise CommandError("the demo runs in the embedded mode: unset CELERY_BROKER_URL")
        # Both checked before the database is touched: a second demo must not reset the first one's
        # password or add its own servers, and a taken port must not be found only after the crawl.
        try:
            with demo_lock(Path(settings.DATA_DIR)):
                problem = None if opts["no_serve"] else port_problem(opts["addr"])
                if problem:
                    raise CommandError(problem)
                self._demo(opts)
        except DemoBusy as exc:
            raise CommandError(str(exc)) from None

    def _demo(self, opts: dict) -> None:
        call_command("migrate", verbosity=0, interactive=False)
        # The test web lives on loopback, which the crawler refuses by default: allow it for this run,
        # and keep the demo brisk (no politeness delay against our own test servers, short timeouts).
        settings.CRAWL_ALLOW_PRIVATE = tuple(settings.CRAWL_ALLOW_PRIVATE) + ("127.0.0.0/8",)
        settings.CRAWL_DEFAULT_DELAY = 0.0
        settings.CRAWL_HEADER_TIMEOUT = min(settings.CRAWL_HEADER_TIMEOUT, 2.0)
        # The test web's silent server is held after its robots.txt times out; the crawl waits for its first
        # probe (a back-off window): a few seconds in the demo, not the minute a real crawl gives a server.
        settings.CRAWL_BACKOFF_BASE = min(settings.CRAWL_BACKOFF_BASE, 5.0)
        settings.MONITOR_INTERVAL = DEMO_CHECK_INTERVAL
        # A receiver on this machine is what a newcomer tries first: alerts may reach loopback in the demo.
        settings.ALERTS_ALLOW_PRIVATE = tuple(settings.ALERTS_ALLOW_PRIVATE) + ("127.0.0.0/8",)
        settings.ALERTS_GROUP_WINDOW = min(settings.ALERTS_GROUP_WINDOW, DEMO_GROUP_WINDOW)
        if opts["channel"]:
            self._channel(opts["channel"])
        with _test_web() as web:
            hosts = len(web.web.hosts())
            self.stdout.write(
                f"local test web: {hosts} servers on 127.0.0.x:{web.port} ({len(web.seeds())} seeded, "
                f"{hosts - len(web.seeds())} reached by links: a slow one and a silent one)"
            )
            self.stdout.write(render_line())
            call_command("crawl", *web.seeds(), json=opts["json"], stdout=self.stdout, stderr=self.stderr)
            self._monitor(web)
            self._rank()
            self._analyze()
            password = self._fresh_admin_password()
            self.stdout.write(
                f"\nadmin user: admin\npassword:   {password}   (shown once; run the demo again for a new one)\n"
            )
            if opts["no_serve"]:
                return
            self.stdout.write(
                f"serving the dashboard at http://{opts['addr']}/dashboard/ and the admin at "
                f"http://{opts['addr']}/admin/  (Ctrl-C to stop)\n"
                f"the test web keeps running and its servers are checked every {DEMO_CHECK_INTERVAL:.0f} s; "
                f"stop one with `python manage.py testweb down {web.web.hosts()[0]}` (`up` starts it again)"
            )
            self.stdout.write(
                "alerts: sent while the demo serves (every 10 s, grouped for "
                f"{settings.ALERTS_GROUP_WINDOW:.0f} s); loopback destinations (127.0.0.0/8) are allowed in "
                "this demo; from another terminal: ALERTS_ALLOW_PRIVATE=127.0.0.0/8 python manage.py add_channel "
                "NAME json://127.0.0.1:PORT/ --events down,up"
            )
            hint = allowed_hosts_hint(opts["addr"])
            if hint:
                self.stdout.write(hint)
            # The test web and the monitor run as long as the dashboard is served: what it shows is live.
            # runserver's "development server" warning: the demo is one on purpose, on loopback; the
            # README says how to serve a cluster (gunicorn in docker/).
            os.environ.setdefault("DJANGO_RUNSERVER_HIDE_WARNING", "true")
            with down_watcher(Path(settings.DATA_DIR), web.set_down, web.web.hosts()), embedded_monitor():
                call_command("runserver", opts["addr"], use_reloader=False)

    def _channel(self, url: str) -> None:
        try:
            added = channel_add(name="demo", url=url, events="down,up")
        except ChannelError as exc:
            raise CommandError(f"--channel: {exc}") from None
        self.stdout.write(f"alerts: channel demo: {added.channel.masked}; rule: {added.rule}")

    def _monitor(self, web: TestWebServer) -> None:
        """Put the test web's servers under monitoring and check them a few times, so the dashboard's
        grid, server pages and charts have data from the first look."""
        rows = "".join(f"http://{host}:{web.port}/,demo\n" for host in web.web.hosts())
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(rows)
        try:
            call_command("import_servers", "--trusted", f.name, stdout=io.StringIO())
        finally:
            os.unlink(f.name)
        for _ in range(DEMO_CHECK_ROUNDS):
            call_command("check_servers", "--all", stdout=io.StringIO())
        rollups_build()
        load_profiles_build()
        # The demo group's public status page (opt-in in general: the demo opts in to show it).
        status_page_ensure(slug="demo", group="demo", title="Demo test web")
        self.stdout.write(
            f"monitoring: {len(web.web.hosts())} servers checked {DEMO_CHECK_ROUNDS} times; "
            "public status page at /status/demo/"
        )

    def _rank(self) -> None:
        """BlockRank the crawled pages (beat does it daily), so the crawl page's top-ranked pages are filled."""
        run = rank_crawl()
        self.stdout.write(f"ranking: {run.pages} pages ranked ({run.block} BlockRank, {run.links} links)")

    def _analyze(self) -> None:
        """Analyse the crawled pages (languages, domains, homepages), so the analyzer's page has data."""
        call_command("analyze", "--no-resolve", "--no-progress", stdout=io.StringIO())
        self.stdout.write("analyzer: pages analysed (see /analyzer/)")

    def _fresh_admin_password(self) -> str:
        password = secrets.token_urlsafe(12)
        user, _ = get_user_model().objects.get_or_create(
            username="admin", defaults={"is_staff": True, "is_superuser": True}
        )
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        return password


def render_line() -> str:
    """Which pages the crawl renders in a browser (CRAWL_RENDER), and with which Chromium."""
    if settings.CRAWL_RENDER == "never":
        why = "set to never" if settings.CRAWL_RENDER_CHROMIUM else "no Chromium found"
        return f"rendering: never ({why}; pages built by JavaScript are read as served)"
    return f"rendering: {settings.CRAWL_RENDER} (Chromium at {settings.CRAWL_RENDER_CHROMIUM}, queue render)"
