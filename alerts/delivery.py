"""Delivering one message to one destination: through Apprise, or through Django's e-mail backend.

``deliver`` never raises for a failed delivery: it returns the outcome with an error text that holds no
secret (Apprise's own log lines, which it writes with masked URLs, or the exception's text with the
destination's URL replaced by its masked form).

``deliver_all`` is what the sender and the test message use: every delivery in its own child process,
all at once, each stopped ALERTS_SEND_TIMEOUT after it started whatever it is doing (crawler.child). The
socket timeouts below bound each read only: a receiver that answers a byte every few seconds would hold a
delivery made in the sender's own thread for ever, and every channel behind it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import apprise
from django.conf import settings
from django.core.mail import EmailMessage, get_connection

from crawler.child import run_children

from .destinations import Destination, allowed_networks, destination_refusal, private_guard, text_redact
from .logic import Message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    error: str = ""


def _payload(message: Message) -> dict:
    return {"idempotency_key": message.key, "events": [e.as_json() for e in message.events]}


def _apprise_send(dest: Destination, message: Message) -> Outcome:
    plugin = apprise.Apprise.instantiate(dest.url)
    if plugin is None:
        return Outcome(False, "the destination is no longer a valid Apprise URL")
    timeout = settings.ALERTS_SEND_TIMEOUT
    plugin.socket_connect_timeout = plugin.socket_read_timeout = timeout
    if hasattr(plugin, "payload_extras") and hasattr(plugin, "headers"):
        # json:// and its kin: the structured events and the key ride in the JSON body and a header,
        # so a receiver can drop a message it already has.
        plugin.headers["Idempotency-Key"] = message.key
        plugin.payload_extras.update(_payload(message))
    else:
        message = Message(message.title, f"{message.body}\n\nkey {message.key}", message.events, message.key)
    notify_type = apprise.NotifyType.FAILURE if message.failure else apprise.NotifyType.INFO
    with apprise.LogCapture(level=logging.WARNING) as logs:
        try:
            # Plain text, said so: Apprise escapes it for a channel that reads HTML or Markdown, so what a
            # server answered (quoted in the message) shows as text there and cannot format or link.
            ok = plugin.notify(
                body=message.body, title=message.title, notify_type=notify_type, body_format=apprise.NotifyFormat.TEXT
            )
        except Exception as exc:  # a plugin bug must fail this delivery, not the sender
            return Outcome(False, text_redact(f"{type(exc).__name__}: {exc}", dest.url, dest.masked()))
        captured = logs.getvalue()
    if ok:
        return Outcome(True)
    lines = [line.split(" - ", 2)[-1] for line in captured.strip().splitlines() if line.strip()]
    return Outcome(False, text_redact("; ".join(lines)[-500:] or "Apprise reported a failure", dest.url, dest.masked()))


def _email_send(dest: Destination, message: Message) -> Outcome:
    if not settings.EMAIL_HOST:
        return Outcome(False, "EMAIL_HOST is not set")
    body = f"{message.body}\n\n-- \nidempotency key {message.key}\n{json.dumps(_payload(message))}\n"
    mail = EmailMessage(
        subject=message.title,
        body=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=list(dest.addresses),
        # The same key gives the same Message-ID: mail clients fold a re-sent copy into the first.
        headers={"Idempotency-Key": message.key, "Message-ID": f"<{message.key}@crawladmin>"},
        # EMAIL_BACKEND and the EMAIL_* settings choose the rest; the timeout bounds a hung relay.
        connection=get_connection(timeout=settings.ALERTS_SEND_TIMEOUT),
    )
    try:
        mail.send()
    except Exception as exc:  # smtplib and socket errors: the outcome says which
        text = f"{type(exc).__name__}: {exc}"
        if settings.EMAIL_HOST_PASSWORD:
            text = text.replace(settings.EMAIL_HOST_PASSWORD, "****")
        return Outcome(False, text[:500])
    return Outcome(True)


def deliver(dest: Destination, message: Message) -> Outcome:
    return _email_send(dest, message) if dest.kind == "email" else _apprise_send(dest, message)


def _deliver_guarded(dest: Destination, message: Message) -> Outcome:
    """In the delivering child: an Apprise destination's host checked against ALERTS_ALLOW_PRIVATE first
    (its address may have changed since the channel was saved), and every connection the delivery makes
    held to allowed addresses. E-mail goes to EMAIL_HOST, the operator's own relay."""
    if dest.kind == "email":
        return deliver(dest, message)
    allowed = allowed_networks(settings.ALERTS_ALLOW_PRIVATE)
    refused = destination_refusal(dest, allowed)
    if refused:
        return Outcome(False, refused)
    with private_guard(allowed):
        return deliver(dest, message)


def _timeout_text(seconds: float) -> str:
    return f"no complete answer within {seconds:g}s (ALERTS_SEND_TIMEOUT): delivery stopped"


def deliver_all(items: list[tuple[Destination, Message]], *, deadline_s: float | None = None) -> list[Outcome]:
    """Deliver each (destination, message) in its own child process, all at once; one that has not ended
    ``deadline_s`` (ALERTS_SEND_TIMEOUT) after it started is killed and fails. One stuck receiver
    therefore delays no other, and once the call returns no attempt of it is still in flight."""
    if not items:
        return []
    deadline = settings.ALERTS_SEND_TIMEOUT if deadline_s is None else deadline_s
    calls = [lambda d=d, m=m: _deliver_guarded(d, m) for d, m in items]
    out = []
    for (dest, _), result in zip(items, run_children(calls, deadline_s=deadline), strict=True):
        if result.ok:
            out.append(result.value)
        elif result.timed_out:
            out.append(Outcome(False, _timeout_text(deadline)))
        else:
            why = text_redact(result.error, dest.url, dest.masked())
            out.append(Outcome(False, f"the delivery ended without an outcome ({why})"[:500]))
    return out
