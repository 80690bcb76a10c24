"""The four HTTP-status categories of seed paper 002 (DESIGN.md §6).

normal     – 2xx/3xx within the delay threshold
delay      – a valid response slower than the threshold
disconnect – no HTTP response at all (refused, DNS failure, timeout, reset)
error      – an HTTP response with a 4xx/5xx status
"""

from __future__ import annotations

import enum


class Category(enum.StrEnum):
    NORMAL = "normal"
    DELAY = "delay"
    DISCONNECT = "disconnect"
    ERROR = "error"


def categorize(status: int | None, latency_s: float, delay_threshold_s: float) -> Category:
    if status is None:
        return Category.DISCONNECT
    if status >= 400 or status < 200:
        return Category.ERROR
    if latency_s > delay_threshold_s:
        return Category.DELAY
    return Category.NORMAL
