"""`manage.py server pause ORIGIN [--until T] [--note TEXT]` / `manage.py server resume ORIGIN` /
`manage.py server show ORIGIN`: an operator holds a server's crawl (until a time, or until resumed), lets it
go again, or reads its health. Through crawlcore.services.health, as the admin and the API."""

from __future__ import annotations

import getpass
import json
import zoneinfo

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from crawlcore.models import Server
from crawlcore.selectors_health import server_health, server_health_history
from crawlcore.services.health import HealthError, health_pause, health_resume
from crawler.hosthealth import until_parse
from crawler.urlnorm import UrlError, canonicalize, server_key

ACTIONS = ("pause", "resume", "show")


def server_by_origin(origin: str) -> Server:
    """The server of `origin` (http://host[:port], a URL of it will do); CommandError when there is none."""
    text = origin.strip()
    if "://" not in text:
        raise CommandError(f"{origin!r}: give the server as http://host[:port] or https://host[:port]")
    try:
        key = server_key(canonicalize(text))
    except UrlError as exc:
        raise CommandError(f"{origin!r} is not a server's address: {exc.reason}") from None
    server = Server.objects.filter(scheme=key.scheme, host=key.host, port=key.port).first()
    if server is None:
        raise CommandError(f"no server {key.origin()} (servers are added by a crawl, import_servers or apply)")
    return server


class Command(BaseCommand):
    help = "Pause a server's crawl (until a time, or until resumed), resume it, or show its health."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=ACTIONS, help="pause, resume, or show its health")
        parser.add_argument("origin", help="The server, e.g. https://www.example.org or http://10.0.0.5:8080")
        parser.add_argument("--until", default=None, help="pause: until then (2026-05-01T18:00, or 30m, 2h, 1d)")
        parser.add_argument("--note", default="", help="pause: why, in a few words (shown with the pause)")
        parser.add_argument("--by", default=None, help="Who pauses or resumes (default: the shell's user)")
        parser.add_argument("--json", action="store_true", help="Print the health as JSON")

    def handle(self, *args, **opts) -> None:
        action = opts["action"]
        if action != "pause" and (opts["until"] or opts["note"]):
            raise CommandError("--until and --note go with pause only")
        server = server_by_origin(opts["origin"])
        by = opts["by"] or _whoami()
        now = timezone.now()
        if action == "pause":
            until = None
            if opts["until"]:
                try:
                    until = until_parse(opts["until"], now, zoneinfo.ZoneInfo(settings.TIME_ZONE))
                except ValueError as exc:
                    raise CommandError(f"--until {exc}") from None
            try:
                health_pause(server_ids=[server.id], by=by, until=until, note=opts["note"], now=now)
            except HealthError as exc:
                raise CommandError(str(exc)) from None
        elif action == "resume":
            health_resume(server_ids=[server.id], by=by, now=now)
        h = server_health(server=server)
        if opts["json"]:
            history = server_health_history(server_id=server.id)
            self.stdout.write(json.dumps({"server": server.origin, "health": h, "history": history}, indent=2,
                                         default=lambda t: t.isoformat()))  # fmt: skip
            return
        self.stdout.write(f"{server.origin}: {health_line(h)}")


def health_line(h: dict) -> str:
    parts = [h["state"]]
    if h["source"]:
        parts.append(f"({h['source']})")
    if h["reason"]:
        parts.append(f"- {h['reason']}")
    if h["until"]:
        parts.append(f"until {h['until']}")
    return " ".join(parts)


def _whoami() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "shell"
