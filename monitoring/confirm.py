"""Confirmed status changes: a server's status moves only after enough checks agree.

Pure: no Django or Celery import. The status values are crawler.status's.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.status import GOOD, Category, Status


@dataclass(frozen=True)
class Confirmation:
    """Where a server stands: its confirmed status and the checks that disagree with it so far.

    ``candidate`` is what the disagreeing checks point to and ``streak`` how many there were in a row.
    """

    status: Status = Status.UNKNOWN
    candidate: Status | None = None
    streak: int = 0


@dataclass(frozen=True)
class Change:
    from_status: Status
    to_status: Status
    reason: str


def _is_recovery(current: Status, target: Status) -> bool:
    """Recovery: to a good status from a bad or unknown one, or from delay back to normal."""
    return target in GOOD and (current not in GOOD or target is Status.NORMAL)


def confirm(
    state: Confirmation, check: Category | str, *, fail_after: int, recover_after: int
) -> tuple[Confirmation, Change | None]:
    """Apply one check to a server's confirmation state; return the new state and the change, if any.

    The rule: it takes ``fail_after`` (N) checks in a row to go down to disconnect or error,
    and ``recover_after`` (M) good ones (normal or delay) to count as recovered. Every other move
    (normal -> delay, disconnect <-> error) is a degradation or a change of failure and needs N.

    Which checks count "in a row": when the move crosses between good and bad, any check on the
    target's side (a disconnect and then an error are two failures in a row, and the status becomes
    the latest one); within one side, only checks of exactly the target category.
    """
    seen = Status(Category(check).value)
    current = state.status
    if seen is current:
        return Confirmation(current), None
    crossing = current is Status.UNKNOWN or ((seen in GOOD) != (current in GOOD))
    prev = state.candidate
    if prev is None:
        continued = False
    elif crossing:
        continued = (prev in GOOD) == (seen in GOOD)  # same side: the same crossing move
    else:
        continued = prev is seen
    streak = state.streak + 1 if continued else 1
    need = recover_after if _is_recovery(current, seen) else fail_after
    if streak >= need:
        reason = f"{streak} {'check' if streak == 1 else 'checks in a row'}: {seen.value}"
        return Confirmation(seen), Change(current, seen, reason)
    return Confirmation(current, seen, streak), None
