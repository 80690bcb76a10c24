"""A channel's destination: an Apprise URL, or plain e-mail addresses sent through Django's e-mail backend.

Parsing here is the one place that knows what a destination may look like, so the admin form, the
add_channel command and the sender agree. Destinations hold secrets (webhook tokens, passwords), so the
only text of one that is ever shown or logged is ``masked()``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import apprise
from apprise.manager_plugins import NotificationManager

EMAIL_PREFIX = "email:"
# Deliberately simple: an address for our own SMTP relay, which does the real checking.
_ADDRESS = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+$")


class DestinationError(ValueError):
    """A destination that cannot be used; the message names what is wrong and never holds a secret."""


@dataclass(frozen=True)
class Destination:
    kind: str  # "email" (Django's backend) or "apprise"
    url: str  # the full text as saved, secrets included: never show or log it
    addresses: tuple[str, ...] = ()  # kind email

    def masked(self) -> str:
        if self.kind == "email":
            return EMAIL_PREFIX + ",".join(self.addresses)
        plugin = apprise.Apprise.instantiate(self.url)
        if plugin is None:  # was valid when saved; a newer Apprise may have dropped the service
            return self.url.split("://", 1)[0] + "://****"
        # Apprise's privacy form masks passwords and tokens; its query part only repeats defaults.
        return plugin.url(privacy=True).split("?", 1)[0]


@cache
def _schemas() -> frozenset[str]:
    return frozenset(s.lower() for s in NotificationManager().schemas())


def destination_parse(text: str) -> Destination:
    """Check a destination and say precisely what is wrong with a bad one.

    ``ops@example.org`` or ``email:ops@example.org,noc@example.org``: e-mail through Django's backend
    (EMAIL_* settings). Anything with ``://``: an Apprise URL of a service Apprise knows, complete
    enough for Apprise to build a notifier from it.
    """
    text = text.strip()
    if not text:
        raise DestinationError("the destination is empty")
    if "://" not in text:
        raw = text[len(EMAIL_PREFIX) :] if text.lower().startswith(EMAIL_PREFIX) else text
        addresses = tuple(a.strip() for a in raw.split(",") if a.strip())
        if not addresses:
            raise DestinationError("no e-mail address after 'email:'")
        for a in addresses:
            if not _ADDRESS.match(a):
                raise DestinationError(
                    f"{a!r} is not an e-mail address, and the destination has no '://' to be an Apprise URL"
                )
        return Destination("email", EMAIL_PREFIX + ",".join(addresses), addresses)
    scheme = text.split("://", 1)[0].lower()
    if scheme not in _schemas():
        raise DestinationError(
            f"'{scheme}://' is not a notification service Apprise knows "
            "(e.g. mailto://, json://, slack://, msteams://, discord://, tgram://, ntfy://)"
        )
    if apprise.Apprise.instantiate(text) is None:
        # Apprise logs why at debug level only, with the URL in it: say what we can without the URL.
        raise DestinationError(
            f"incomplete or malformed {scheme}:// URL: Apprise cannot build a notifier from it "
            "(a host, token or id it requires is missing or invalid)"
        )
    return Destination("apprise", text)


def text_redact(text: str, secret: str, masked: str) -> str:
    """An error text with the destination's full URL (and its password part) replaced by the masked one,
    for the odd library message that quotes what it was given."""
    if secret and secret in text:
        text = text.replace(secret, masked)
    return text
