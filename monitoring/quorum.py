"""Quorum across locations (seed 002's crawler numbers), the pure part.

A monitor checked from several crawler numbers keeps one confirmation state per location (each applies
``logic.confirm`` to its own checks); the server's status moves only when K locations' confirmed statuses
agree (default: a majority). One location with a broken uplink then cannot page anyone.

No Django import: monitoring.services.check_locations persists the states and the change this returns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from crawler.status import BAD, GOOD, Status


class LocationsError(ValueError):
    pass


def locations_parse(text: str) -> tuple[int, ...]:
    """``"1,2,3"`` -> (1, 2, 3); empty: not a multi-location monitor."""
    out = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if not part.isdigit() or int(part) > 10_000:
            raise LocationsError(f"{part!r} is not a crawler number 0-10000")
        out.append(int(part))
    return tuple(sorted(set(out)))


def quorum_needed(n_locations: int, quorum: int | None) -> int:
    """K: as set (at most N), or a majority of N."""
    return min(quorum, n_locations) if quorum else n_locations // 2 + 1


@dataclass(frozen=True)
class QuorumChange:
    to_status: Status
    reason: str
    seen: dict[str, str]  # crawler number -> its confirmed status, for the message


def _side_winner(statuses: list[Status], prefer: Status) -> Status:
    """The most common status of one side; a tie goes to `prefer` (normal, or error over disconnect)."""
    counts = Counter(statuses)
    top = max(counts.values())
    tied = [s for s, n in counts.items() if n == top]
    return prefer if prefer in tied else sorted(tied)[0]


def quorum_decide(current: Status, seen: Mapping[int, Status], k: int) -> QuorumChange | None:
    """The server's new status from its locations' confirmed statuses, or None when it stays.

    Crossing between good and bad needs K locations on the other side; a move within a side (normal to
    delay, disconnect to error) needs K locations on that exact status. Locations with no confirmed
    status yet (unknown) count for neither side.
    """
    bad = [s for s in seen.values() if s in BAD]
    good = [s for s in seen.values() if s in GOOD]
    new: Status | None = None
    if current not in BAD and len(bad) >= k:
        new = _side_winner(bad, Status.ERROR)
    elif current not in GOOD and len(good) >= k:
        new = _side_winner(good, Status.NORMAL)
    else:
        exact = Counter(seen.values())
        side = BAD if current in BAD else GOOD
        agreeing = [s for s, n in exact.items() if s in side and s is not current and n >= k]
        new = agreeing[0] if agreeing else None
    if new is None or new is current:
        return None
    agree = sum(1 for s in seen.values() if (s in BAD) == (new in BAD) and s is not Status.UNKNOWN)
    listing = ", ".join(f"#{n} {s.value}" for n, s in sorted(seen.items()))
    return QuorumChange(
        new,
        f"{agree} of {len(seen)} locations (quorum {k}): {listing}",
        {str(n): s.value for n, s in sorted(seen.items())},
    )
