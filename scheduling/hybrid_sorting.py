"""Seed 000: the order in which servers are sent to the robots each hour, from their 24-hour load profiles.

Three policies behind one interface (`ServerOrder`), each a 24-column table — column h lists every
server in the order to dispatch them during hour h of the day:

* **Random** — the server list as written, the same in every column (the paper's 무작위: "robots are
  sent in the order the server list was made"; it ignores load).
* **Sorting** — column h: all servers by ascending load in hour h.
* **HybridSorting** — the paper's priority table: column h starts with the servers whose least-loaded
  hour is h (ascending by their load then), followed by every other server by its load in hour h.
  Its pause rule (paper step 5): a server still unfinished at the boundary into hour h stops there
  when a later hour is less loaded for it, and resumes from its checkpoint in that hour.

A load profile is 24 numbers, lower meaning less loaded (the monitoring app's mean response time per
hour of day, the simulator's load fraction, or a `server,hour,load` CSV). Servers without a profile come
after the profiled ones, in the order given; they are never paused.

Ties, the same in every column and policy: equal loads go by server name (`names`, e.g. the origin),
then by the server list's order. A server whose least load occurs in several hours takes the earliest of
them as its best hour (the paper's 최소값 algorithm scanning hours 0 to 23).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

HOURS = 24
POLICIES = ("random", "sorting", "hybrid")

K = TypeVar("K", bound=Hashable)
Profile = tuple[float, ...]


def profile_normalized(raw: Sequence[float | None] | None) -> Profile | None:
    """A usable 24-value profile: hours without data take the mean of the hours with data.
    None when there is no data at all (or the shape is wrong)."""
    if raw is None or len(raw) != HOURS:
        return None
    known = [float(v) for v in raw if v is not None and math.isfinite(float(v))]
    if not known:
        return None
    fill = sum(known) / len(known)
    return tuple(fill if v is None or not math.isfinite(float(v)) else float(v) for v in raw)


def best_hour(profile: Profile) -> int:
    """The least-loaded hour (the paper's 최적부하탐색기); the earliest one on ties."""
    return min(range(HOURS), key=lambda h: (profile[h], h))


def pause_hours(profile: Profile, hour: int, *, lookahead: int, margin: float = 0.0) -> int:
    """The pause rule at the boundary into `hour` for a server not yet finished (seed 000, step 5).

    The paper: "compare the coming hour's network load with the load after it; if the coming hour's is
    larger, stop here, keep the checkpoint, and start from it next time" — lookahead 1, margin 0, the
    default of the live crawler. Generalised: 0 means go on now; k ≥ 1 means stop now and resume at
    hour + k, the least-loaded of the next `lookahead` hours, because it is lower than this hour's load
    by more than `margin` (a fraction: 0.1 asks for 10 % less). The earliest such hour wins ties.
    lookahead 0 turns the rule off.
    """
    if lookahead <= 0:
        return 0
    best, wait = profile[hour % HOURS] * (1.0 - margin), 0
    for k in range(1, min(lookahead, HOURS - 1) + 1):
        load = profile[(hour + k) % HOURS]
        if load < best:
            best, wait = load, k
    return wait


class ServerOrder(Protocol[K]):
    """A server-order policy: which server to send first in each hour, and whether to pause one."""

    name: str

    def order(self, hour: int, servers: Iterable[K]) -> list[K]:
        """`servers` (the ones with work) in dispatch order for `hour` (0-23): the first is sent first."""
        ...

    def pause(self, server: K, hour: int) -> int:
        """At the boundary into `hour`, for an unfinished server: 0 to go on, or the hours to wait."""
        ...

    def table(self) -> list[list[K]]:
        """The 24 columns: column h lists every known server in its order for hour h."""
        ...


class _Table:
    """Shared by the three policies: a precomputed 24-column table, filtered to the servers asked about."""

    name = ""

    def __init__(
        self,
        profiles: Mapping[K, Sequence[float | None] | None],
        listing: Sequence[K] | None = None,
        names: Mapping[K, str] | None = None,
    ):
        listing = list(listing) if listing is not None else list(profiles)
        self.names = dict(names or {})
        self.position = {s: i for i, s in enumerate(listing)}
        for s in profiles:
            self.position.setdefault(s, len(self.position))
        self.listing = sorted(self.position, key=self.position.__getitem__)
        normalized = {s: profile_normalized(p) for s, p in profiles.items()}
        self.profiles: dict[K, Profile] = {s: p for s, p in normalized.items() if p is not None}
        self._columns = self._build()
        self._rank = [{s: i for i, s in enumerate(col)} for col in self._columns]

    def _build(self) -> list[list[K]]:
        raise NotImplementedError

    def table(self) -> list[list[K]]:
        return [list(col) for col in self._columns]

    def order(self, hour: int, servers: Iterable[K]) -> list[K]:
        rank = self._rank[hour % HOURS]
        servers = list(dict.fromkeys(servers))
        placed = sorted((s for s in servers if s in rank), key=rank.__getitem__)
        return placed + [s for s in servers if s not in rank]

    def pause(self, server: K, hour: int) -> int:
        return 0

    def _by_load(self, hour: int, servers: Iterable[K]) -> list[K]:
        return sorted(servers, key=lambda s: (self.profiles[s][hour], self.names.get(s, ""), self.position[s]))


class Random(_Table):
    """The server list as written, in every hour: load is not looked at."""

    name = "random"

    def _build(self) -> list[list[K]]:
        return [list(self.listing) for _ in range(HOURS)]


class Sorting(_Table):
    """Each hour, the profiled servers by ascending load in that hour."""

    name = "sorting"

    def _build(self) -> list[list[K]]:
        profiled = [s for s in self.listing if s in self.profiles]
        return [self._by_load(h, profiled) for h in range(HOURS)]


class HybridSorting(_Table):
    """Seed 000's priority table and pause rule."""

    name = "hybrid"

    def __init__(
        self,
        profiles: Mapping[K, Sequence[float | None] | None],
        listing: Sequence[K] | None = None,
        names: Mapping[K, str] | None = None,
        *,
        pause_lookahead: int = 0,
        pause_margin: float = 0.0,
    ):
        self.pause_lookahead = pause_lookahead
        self.pause_margin = pause_margin
        super().__init__(profiles, listing, names)

    def _build(self) -> list[list[K]]:
        profiled = [s for s in self.listing if s in self.profiles]
        best = {s: best_hour(self.profiles[s]) for s in profiled}
        columns = []
        for h in range(HOURS):
            # Step 2: the servers whose least-loaded hour is h, ascending by load; step 3: all the others.
            first = self._by_load(h, (s for s in profiled if best[s] == h))
            rest = self._by_load(h, (s for s in profiled if best[s] != h))
            columns.append(first + rest)
        return columns

    def pause(self, server: K, hour: int) -> int:
        profile = self.profiles.get(server)
        if profile is None:
            return 0
        return pause_hours(profile, hour, lookahead=self.pause_lookahead, margin=self.pause_margin)


def policy_build(
    name: str,
    profiles: Mapping[K, Sequence[float | None] | None],
    listing: Sequence[K] | None = None,
    *,
    names: Mapping[K, str] | None = None,
    pause_lookahead: int = 0,
    pause_margin: float = 0.0,
) -> ServerOrder[K]:
    """The policy called `name` (random, sorting or hybrid) over these profiles.

    `listing`: the server list's order (Random's order, and the last tie-break); default: the profiles'
    order. `names`: each server's name, the tie-break between equal loads. The pause arguments apply to
    hybrid only.
    """
    if name == "random":
        return Random(profiles, listing, names)
    if name == "sorting":
        return Sorting(profiles, listing, names)
    if name == "hybrid":
        return HybridSorting(profiles, listing, names, pause_lookahead=pause_lookahead, pause_margin=pause_margin)
    raise ValueError(f"unknown scheduling policy {name!r}: expected one of {', '.join(POLICIES)}")


class ProfileCsvError(ValueError):
    """A load-profile CSV that does not follow `server,hour,load`; the message says where."""


def profiles_from_csv(lines: Iterable[str]) -> tuple[dict[str, list[float | None]], list[str]]:
    """Read load profiles from CSV with the header `server,hour,load`, one row per server and hour.

    Returns (profiles by server name, the servers in the order they first appear: Random's list).
    An hour without a row is unknown (it takes the mean of the others, `profile_normalized`); a repeated
    (server, hour), an hour outside 0-23 or a load that is not a finite number is an error.
    """
    reader = csv.reader(lines)
    header = [c.strip() for c in next(reader, [])]
    if header != ["server", "hour", "load"]:
        raise ProfileCsvError(f"line 1: the header must be server,hour,load, not {','.join(header)!r}")
    profiles: dict[str, list[float | None]] = {}
    for n, row in enumerate(reader, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 3:
            raise ProfileCsvError(f"line {n}: expected 3 fields, got {len(row)}")
        server, hour_s, load_s = (c.strip() for c in row)
        try:
            hour, load = int(hour_s), float(load_s)
        except ValueError:
            raise ProfileCsvError(f"line {n}: hour must be an integer and load a number") from None
        if not server or not 0 <= hour < HOURS or not math.isfinite(load):
            raise ProfileCsvError(f"line {n}: a server name, an hour 0-23 and a finite load are required")
        profile = profiles.setdefault(server, [None] * HOURS)
        if profile[hour] is not None:
            raise ProfileCsvError(f"line {n}: a second row for server {server!r}, hour {hour}")
        profile[hour] = load
    return profiles, list(profiles)
