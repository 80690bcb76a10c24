"""A crawl job's rules, the pure part (no Django): its name, its path patterns, its time windows, its
schedule and durations, checked when the job is written and applied to each link its pages lead to.

Patterns are regular expressions on the URL path (with its query), compiled by the `regex` module with a
bound on their length and searched with a time bound: an operator's catastrophic pattern costs at most
PATTERN_TIMEOUT_S of an extract worker per link, and the link is then set aside, never followed blindly.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time
from urllib.parse import urlsplit

import regex
from croniter import croniter

from crawler import notfollowed

MAX_PATTERNS = 50
MAX_PATTERN_LENGTH = 500
PATTERN_TIMEOUT_S = 0.05
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
WINDOW_RE = re.compile(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*-\s*([01]?\d|2[0-4]):([0-5]\d)\s*$")
DURATION_RE = re.compile(r"^\s*(\d+)\s*([smhdw]?)\s*$")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

# Why a job does not follow a link (the URL's exclusion reason when no job of its page follows it).
EXCLUDED_BY_PATTERN = notfollowed.JOB_PATTERN
PAGE_LIMIT = notfollowed.JOB_PAGE_LIMIT
JOB_PAUSED = notfollowed.JOB_PAUSED
JOB_STOPPED = notfollowed.JOB_STOPPED
OUTSIDE_WINDOW = notfollowed.JOB_OUTSIDE_WINDOW


class JobRuleError(ValueError):
    pass


def name_check(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise JobRuleError("must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return name


def duration_seconds(value: object) -> int:
    """Seconds from 3600, "3600", "90m", "1h", "2d" or "1w"."""
    if isinstance(value, bool):
        raise JobRuleError("must be a duration such as 3600, 90m, 1h, 2d")
    if isinstance(value, int):
        if value < 0:
            raise JobRuleError("must not be negative")
        return value
    m = DURATION_RE.match(value) if isinstance(value, str) else None
    if m is None:
        raise JobRuleError("must be a duration such as 3600, 90m, 1h, 2d")
    return int(m.group(1)) * UNITS[m.group(2)]


@functools.lru_cache(maxsize=1024)
def pattern_compile(pattern: str) -> regex.Pattern:
    if not isinstance(pattern, str) or not pattern:
        raise JobRuleError("a pattern must be a non-empty string")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise JobRuleError(f"a pattern longer than {MAX_PATTERN_LENGTH} characters")
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise JobRuleError(f"{pattern!r} is not a regular expression ({exc})") from None


def patterns_check(patterns: object) -> list[str]:
    if patterns is None:
        return []
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise JobRuleError("must be a list of regular expressions")
    if len(patterns) > MAX_PATTERNS:
        raise JobRuleError(f"at most {MAX_PATTERNS} patterns")
    for p in patterns:
        pattern_compile(p)
    return list(patterns)


def url_path(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True)
class PathRules:
    """A job's include and exclude patterns. `reason(url)` is "" when the job may follow the URL: no
    exclude pattern is found in its path and, when there are include patterns, one of them is."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def reason(self, url: str, *, timeout_s: float = PATTERN_TIMEOUT_S) -> str:
        if not self.include and not self.exclude:
            return ""
        path = url_path(url)
        try:
            for p in self.exclude:
                if pattern_compile(p).search(path, timeout=timeout_s) is not None:
                    return EXCLUDED_BY_PATTERN
            if self.include and not any(
                pattern_compile(p).search(path, timeout=timeout_s) is not None for p in self.include
            ):
                return EXCLUDED_BY_PATTERN
        except TimeoutError:
            return EXCLUDED_BY_PATTERN  # a pattern that cannot decide in time never lets a URL through
        return ""


def windows_check(windows: object) -> list[str]:
    """Time windows as "HH:MM-HH:MM" (22:00-06:00 runs past midnight); an empty list: always."""
    if windows is None:
        return []
    if isinstance(windows, str):
        windows = [windows]
    if not isinstance(windows, list):
        raise JobRuleError('must be a list of "HH:MM-HH:MM"')
    out = []
    for w in windows:
        if not isinstance(w, str) or WINDOW_RE.match(w) is None:
            raise JobRuleError(f'{w!r} is not a time window "HH:MM-HH:MM"')
        out.append(w.replace(" ", ""))
    return out


def _bounds(window: str) -> tuple[time, time]:
    m = WINDOW_RE.match(window)
    assert m is not None
    h1, m1, h2, m2 = (int(g) for g in m.groups())
    end = time(23, 59, 59, 999999) if h2 == 24 else time(h2, m2)
    return time(h1, m1), end


def in_windows(windows: Sequence[str], local: datetime) -> bool:
    """Whether the local time `local` is inside one of the windows (always, with none)."""
    if not windows:
        return True
    now = local.time().replace(tzinfo=None)
    for w in windows:
        start, end = _bounds(w)
        if start <= end:
            if start <= now < end:
                return True
        elif now >= start or now < end:
            return True
    return False


def schedule_check(schedule: object) -> str:
    if schedule in (None, ""):
        return ""
    if not isinstance(schedule, str) or len(schedule.split()) != 5 or not croniter.is_valid(schedule):
        raise JobRuleError('must be a cron expression of five fields, e.g. "0 2 * * *"')
    return schedule


def schedule_next(schedule: str, after: datetime) -> datetime:
    """The next start of the cron schedule after `after` (same time zone as `after`)."""
    return croniter(schedule, after).get_next(datetime)


JOB_KEYS = ("name", "group", "seeds", "scope", "max_depth", "max_pages", "include", "exclude", "revisit_after",
            "delay", "concurrency", "windows", "time_zone", "schedule", "enabled", "render")  # fmt: skip
DEFAULTS = {"group": "", "scope": "host", "max_depth": None, "max_pages": None, "include": [], "exclude": [],
            "revisit_after": None, "delay": None, "concurrency": None, "windows": [], "time_zone": "UTC",
            "schedule": "", "enabled": True, "render": ""}  # fmt: skip
MAX_SEEDS = 1000


def _whole(value: object, *, minimum: int, maximum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise JobRuleError(f"must be a whole number from {minimum} to {maximum}")
    return value


def _seeds(value: object) -> list[str]:
    from crawler.urlnorm import UrlError, canonicalize

    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or len(value) > MAX_SEEDS:
        raise JobRuleError(f"must be a list of 1 to {MAX_SEEDS} URLs")
    out = []
    for url in value:
        if not isinstance(url, str):
            raise JobRuleError("must be a list of URLs")
        try:
            out.append(canonicalize(url))
        except UrlError as exc:
            raise JobRuleError(f"{url!r} is not a crawlable URL ({exc.reason})") from None
    return out


def _time_zone(value: object) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(value, str) or not value:
        raise JobRuleError("must be a time zone name such as UTC or Asia/Seoul")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise JobRuleError(f"{value!r} is not a known time zone") from None
    return value


def _text(value: object, *, maximum: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > maximum or any(ord(c) < 32 for c in value):
        raise JobRuleError(f"must be text of at most {maximum} characters, without control characters")
    return value


def _delay(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 3600:
        raise JobRuleError("must be seconds from 0 to 3600")
    return float(value)


def _scope(value: object) -> str:
    if value not in ("host", "domain", "any"):
        raise JobRuleError("must be host, domain or any")
    return str(value)


def _render(value: object) -> str:
    """auto, always or never (crawler.render_need); empty: the CRAWL_RENDER setting."""
    if value is None or value == "":
        return ""
    if value not in ("auto", "always", "never"):
        raise JobRuleError("must be auto, always or never")
    return str(value)


def _enabled(value: object) -> bool:
    if not isinstance(value, bool):
        raise JobRuleError("must be true or false")
    return value


CHECKS = {
    "name": name_check,
    "group": lambda v: _text(v, maximum=100),
    "seeds": _seeds,
    "scope": _scope,
    "max_depth": lambda v: _whole(v, minimum=0, maximum=10_000),
    "max_pages": lambda v: _whole(v, minimum=1, maximum=10**9),
    "include": patterns_check,
    "exclude": patterns_check,
    "revisit_after": lambda v: None if v is None else duration_seconds(v),
    "delay": _delay,
    "concurrency": lambda v: _whole(v, minimum=1, maximum=64),
    "windows": windows_check,
    "time_zone": _time_zone,
    "schedule": schedule_check,
    "enabled": _enabled,
    "render": _render,
}  # fmt: skip


def job_spec_check(data: object, *, partial: bool = False) -> tuple[dict, dict[str, str]]:
    """A job's keys checked and made canonical: (the clean values, {key: problem}). Keys left out take their
    defaults, unless `partial` (an update: only the keys given)."""
    if not isinstance(data, dict):
        return {}, {"": "a job must be a mapping of its keys"}
    problems: dict[str, str] = {}
    clean: dict = {}
    for key in data:
        if key not in CHECKS:
            problems[str(key)] = f"unknown key (known: {', '.join(JOB_KEYS)})"
    wanted = [k for k in JOB_KEYS if k in data] if partial else list(JOB_KEYS)
    for key in wanted:
        if key not in data and key in ("name", "seeds"):
            problems[key] = "required"
            continue
        value = data.get(key, DEFAULTS.get(key))
        try:
            clean[key] = CHECKS[key](value)
        except JobRuleError as exc:
            problems[key] = str(exc)
    return clean, problems
