"""A channel's destination: an Apprise URL, or plain e-mail addresses sent through Django's e-mail backend.

Parsing here is the one place that knows what a destination may look like, so the admin form, the
add_channel command and the sender agree. Destinations hold secrets (webhook tokens, passwords, and path
parts that are often a webhook's secret), so the only text of one that is ever shown or logged is
``masked()``: the scheme and the host, nothing past it.

A destination whose service takes a host from the URL (json://, form://, ntfy://, mailto://, gotify:// ...)
is where the sender will connect: ``destination_refusal`` refuses one whose host is, or resolves to, a
private address outside the allowed networks (ALERTS_ALLOW_PRIVATE), when the channel is saved and again
when each message goes out (``private_guard``, in the child process that delivers it).
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import apprise
from apprise.manager_plugins import NotificationManager

from crawler.lookup import STUCK_AFTER
from crawler.netguard import Network, forbidden_reason, parse_cidrs
from crawler.resolve import resolve_allowed

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
        """Scheme and host (with Apprise's masked user part), nothing past the host: a path or a query is
        often the secret itself. A service without a host of its own (slack://, discord://, tgram:// ...)
        has only tokens in its URL: its scheme alone."""
        if self.kind == "email":
            return EMAIL_PREFIX + ",".join(self.addresses)
        plugin = apprise.Apprise.instantiate(self.url)
        scheme = self.url.split("://", 1)[0].lower()
        if plugin is None or not _has_host(plugin):  # None: a newer Apprise may have dropped the service
            return f"{scheme}://****"
        private = plugin.url(privacy=True)
        scheme, rest = private.split("://", 1)
        netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
        tail = rest[len(netloc) :].split("?", 1)[0]  # Apprise's query part only repeats its defaults
        return f"{scheme}://{netloc}" + ("/…" if tail.strip("/") else "")

    def host_port(self) -> tuple[str, int] | None:
        """Where the sender connects, for a service that takes its host from the URL; None otherwise."""
        if self.kind == "email":
            return None  # EMAIL_HOST: the operator's own relay, set in the environment
        plugin = apprise.Apprise.instantiate(self.url)
        if plugin is None or not _has_host(plugin) or not getattr(plugin, "host", None):
            return None
        port = getattr(plugin, "port", None) or (443 if getattr(plugin, "secure", False) else 80)
        return str(plugin.host), int(port)


def _has_host(plugin: Any) -> bool:
    return any("{host}" in t for t in getattr(plugin, "templates", ()))


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
    if scheme in ("http", "https") and scheme not in _schemas():
        # A webhook is the likely intent: Apprise posts JSON to it as json:// (http) or jsons:// (https).
        rest = text.split("://", 1)[1]
        raise DestinationError(
            f"'{scheme}://' is not a notification service Apprise knows; for a webhook that takes a JSON POST "
            f"write {'json' if scheme == 'http' else 'jsons'}://{rest}"
        )
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


def _refusal_of(addresses: Sequence[str], allowed: Sequence[Network]) -> tuple[str, str] | None:
    for ip in addresses:
        reason = forbidden_reason(ip, allowed)
        if reason:
            return ip, reason
    return None


def _refusal_text(dest: Destination) -> str:
    # Neither the address nor its kind: what a name resolves to is not told to whoever typed the name
    # (a refusal that said it would be a lookup of internal names for anyone who may save a channel).
    return (
        f"{dest.masked()}: not an address alerts may reach: refused "
        "(ALERTS_ALLOW_PRIVATE lists the networks alerts may reach, e.g. 10.0.0.0/8)"
    )


def destination_refusal(
    dest: Destination, allowed: Sequence[Network], *, lookup: Callable[[str, int], list[str]] | None = None
) -> str | None:
    """Why the sender may not connect to this destination's host (a private address not allowed), or None.
    ``lookup`` resolves a name (default: every address, within STUCK_AFTER: crawler.resolve.resolve_allowed);
    a name that does not resolve is let through
    here: the delivery checks again, on the addresses it actually connects to."""
    where = dest.host_port()
    if where is None:
        return None
    host, port = where
    try:
        addresses = (lookup or lookup_within(STUCK_AFTER))(host, port)
    except (OSError, UnicodeError):
        return None
    return _refusal_text(dest) if _refusal_of(addresses, allowed) else None


@contextmanager
def private_guard(allowed: Sequence[Network]) -> Iterator[None]:
    """Every connection made inside goes only to allowed addresses: socket.getaddrinfo answers without the
    forbidden ones (an error when none is left), so a name that changed its address since the check, or a
    redirect, reaches no private address either. Process-wide: only for the child that delivers."""
    original = socket.getaddrinfo

    def guarded(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        infos = original(host, port, *args, **kwargs)
        kept = [i for i in infos if forbidden_reason(str(i[4][0]).split("%", 1)[0], allowed) is None]
        if not kept:
            raise socket.gaierror(socket.EAI_NONAME, f"{host}: a private address, refused (ALERTS_ALLOW_PRIVATE)")
        return kept

    socket.getaddrinfo = guarded
    try:
        yield
    finally:
        socket.getaddrinfo = original


def allowed_networks(cidrs: Sequence[str]) -> tuple[Network, ...]:
    """ALERTS_ALLOW_PRIVATE's networks (settings hold them as text)."""
    return parse_cidrs(",".join(cidrs))


def lookup_within(timeout_s: float) -> Callable[[str, int], list[str]]:
    """A name lookup that ends within ``timeout_s`` whatever the resolver does: every address the name has
    (the guard is the caller's), through crawler.resolve.resolve_allowed, the one way names are resolved."""

    def lookup(host: str, port: int) -> list[str]:
        return list(resolve_allowed(host, port, guard=None, deadline=timeout_s))

    return lookup


_URL_TAIL = re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s?#]+)[/?#][^\s'\"<>)]*", re.IGNORECASE)


class UrlTailRedactor(logging.Filter):
    """On Apprise's logger: every URL in its messages cut after the host, as ``masked()`` shows a
    destination (Apprise masks passwords and tokens, not a path that is itself the secret)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        redacted = _URL_TAIL.sub(r"\1/…", text)
        if redacted != text:
            record.msg, record.args = redacted, ()
        return True


def apprise_logs_redact() -> None:
    """Install the redactor on Apprise's logger once (AlertsConfig.ready)."""
    logger = logging.getLogger("apprise")
    if not any(isinstance(f, UrlTailRedactor) for f in logger.filters):
        logger.addFilter(UrlTailRedactor())
