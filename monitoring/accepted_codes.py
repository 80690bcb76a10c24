"""A check's category with a server's accepted status codes (seed 002's four categories, per server).

Pure: no Django or Celery import.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.status import Category, categorize


class AcceptedCodesError(ValueError):
    pass


@dataclass(frozen=True)
class AcceptedCodes:
    """The status codes a server may answer with and still be up. Empty: the default rule (2xx/3xx).

    Written as a comma list of codes and ranges: ``"200,301-302,401"``.
    """

    ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, text: str) -> AcceptedCodes:
        ranges: list[tuple[int, int]] = []
        for part in text.replace(" ", "").split(","):
            if not part:
                continue
            low, sep, high = part.partition("-")
            try:
                lo, hi = int(low), int(high if sep else low)
            except ValueError:
                raise AcceptedCodesError(f"{part!r} is not a status code or a range like 200-299") from None
            if not (100 <= lo <= hi <= 599):
                raise AcceptedCodesError(f"{part!r}: codes must be within 100-599, low to high")
            ranges.append((lo, hi))
        return cls(tuple(sorted(set(ranges))))

    def __str__(self) -> str:
        return ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges)

    def __contains__(self, status: object) -> bool:
        return isinstance(status, int) and any(lo <= status <= hi for lo, hi in self.ranges)


def classify(status: int | None, latency_s: float, threshold_s: float, accepted: AcceptedCodes) -> Category:
    """The category of one check. With accepted codes set, a code outside them is an *error* even when
    it is 2xx/3xx, and a code inside them (say 401 on a protected health page) is normal or delay."""
    if not accepted.ranges or status is None:
        return categorize(status, latency_s, threshold_s)
    if status not in accepted:
        return Category.ERROR
    return Category.DELAY if latency_s > threshold_s else Category.NORMAL
