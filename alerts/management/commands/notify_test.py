"""`python manage.py notify_test NAME`: send one test message to the channel now; exit status 1 if it failed."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from alerts.models import Channel
from alerts.services.channels import channel_test


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="the channel's name")

    def handle(self, *args, name: str, **options) -> None:
        channel = Channel.objects.filter(name=name).first()
        if channel is None:
            raise CommandError(f"no channel named {name!r}")
        outcome = channel_test(channel=channel)
        if outcome.ok:
            self.stdout.write(f"sent a test message to {channel.name} ({channel.masked})")
            return
        self.stderr.write(f"test message to {channel.name} ({channel.masked}) failed: {outcome.error}")
        sys.exit(1)
