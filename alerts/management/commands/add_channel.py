"""`python manage.py add_channel NAME URL [--group G | --server HOST | --job NAME] [--events down,up,...]`: a channel
and the rule routing events to it (all servers by default); the events are down, up, delay, cert, content, domain and
beat (one of beat's jobs outlasting its period, told to rules for all servers only), and a crawl job's job.started,
job.finished, job.stalled and job.budget_reached (routed by the job, its group, or all). URL is any Apprise URL, or
e-mail addresses sent through Django's e-mail backend. Running it again with the same name replaces the URL.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from alerts.services.channels import ChannelError, channel_add


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="the channel's name")
        parser.add_argument("url", help="Apprise URL (json://, slack://, mailto:// ...) or e-mail address(es)")
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--group", default="", help="only servers of this group")
        scope.add_argument("--server", default="", help="only this server (host name)")
        scope.add_argument("--job", default="", help="only this crawl job's events (job.started, job.finished …)")
        parser.add_argument("--events", default="", help="comma list of event kinds (default: all)")

    def handle(self, *args, name: str, url: str, group: str, server: str, events: str, job: str, **options) -> None:
        try:
            added = channel_add(name=name, url=url, group=group, server_host=server, events=events, job=job)
        except ChannelError as exc:
            raise CommandError(str(exc)) from None
        verb = "added" if added.created else "updated"
        self.stdout.write(f"{verb} channel {added.channel.name}: {added.channel.masked}; rule: {added.rule}")
