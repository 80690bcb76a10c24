"""What apps above monitoring learn of its confirmed status changes, without monitoring importing them.

Layers import downwards only, so monitoring cannot call alerts. Instead an app above registers a
function here from its AppConfig.ready(), and monitoring calls every registered one:

* ``status_changes_written(changes)`` inside the transaction that wrote the StatusChange rows (their
  ids set), so what a hook writes (alerts' outbox rows) commits or rolls back with the change itself;
  an exception from a hook rolls the checks back too, and the lease brings the servers due again.
* ``certificates_seen(seen)`` in the same transaction, with the certificates https checks saw
  (monitoring.services.certificates.CertificateSeen), so alerts can tell an expiry coming.
* ``domains_seen(seen)`` with the domains whose registration expiry a lookup just told
  (monitoring.services.domains.DomainSeen), in the transaction that stores them, so alerts can tell an
  expiry coming as it tells certificates'.
* ``round_finished()`` when an operator's ``check_servers`` round has been recorded, so what it caused
  is delivered before the command exits.

Plain lists, no Django signals: the order is registration order and a failure is never swallowed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

ChangesHook = Callable[[Sequence[Any]], None]
RoundHook = Callable[[], None]

_changes_hooks: list[ChangesHook] = []
_round_hooks: list[RoundHook] = []
_certificate_hooks: list[ChangesHook] = []
_domain_hooks: list[ChangesHook] = []


def on_status_changes(hook: ChangesHook) -> None:
    if hook not in _changes_hooks:
        _changes_hooks.append(hook)


def on_certificates_seen(hook: ChangesHook) -> None:
    if hook not in _certificate_hooks:
        _certificate_hooks.append(hook)


def on_domains_seen(hook: ChangesHook) -> None:
    if hook not in _domain_hooks:
        _domain_hooks.append(hook)


def on_round_finished(hook: RoundHook) -> None:
    if hook not in _round_hooks:
        _round_hooks.append(hook)


def status_changes_written(changes: Sequence[Any]) -> None:
    """Call with the StatusChange rows just created, inside their transaction."""
    if changes:
        for hook in _changes_hooks:
            hook(changes)


def certificates_seen(seen: Sequence[Any]) -> None:
    if seen:
        for hook in _certificate_hooks:
            hook(seen)


def domains_seen(seen: Sequence[Any]) -> None:
    if seen:
        for hook in _domain_hooks:
            hook(seen)


def round_finished() -> None:
    for hook in _round_hooks:
        hook()
