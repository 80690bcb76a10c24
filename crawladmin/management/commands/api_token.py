"""`manage.py api_token USER [--name TEXT]`: a new REST API token for the user, printed once as the last word."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from crawlcore.schema import SchemaOutdated, schema_ensure
from dashboard.tokens import api_token_create


class Command(BaseCommand):
    help = "Make a REST API token for a user; it is shown once (only its hash is kept)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("user", help="The username the token acts as (with that user's groups)")
        parser.add_argument("--name", default="", help="What the token is for, shown in the admin")

    def handle(self, *args, **opts) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None
        user = get_user_model().objects.filter(username=opts["user"]).first()
        if user is None:
            raise CommandError(f"no user named {opts['user']!r} (manage.py createsuperuser, or the admin)")
        if not user.is_active:
            raise CommandError(f"user {opts['user']!r} is not active")
        if len(opts["name"]) > 100:
            raise CommandError("--name: at most 100 characters")
        _, token = api_token_create(user=user, name=opts["name"])
        self.stdout.write(f"API token for {user.username} (shown once, keep it safe): {token}")
