"""A crawl job's rules, the pure part (no Django): its name, its path patterns, its time windows, its
schedule and durations, checked when the job is written and applied to each link its pages lead to.

Patterns are regular expressions on the URL path (with its query), written by an operator and run on the
links of strangers' pages. When a job is saved they are compiled in a bounded child (crawler.userregex), so a
pattern that expands at compile time into gigabytes is refused there, never compiled in a web process. They
are searched with one time budget for all the links of a page (PAGE_BUDGET_S, `PathRules.reasons`), never a
bound per link and pattern (which a page of 5,000 links multiplies): the caller runs that in a child
process too (crawlcore.services.job_admission), so a search stuck inside the matcher is stopped. A link its page's
budget could not decide is set aside, never followed blindly.
"""

from __future__ import annotations

import re
import time as clock
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

from crawler import notfollowed
from crawler.userregex import compile_check, compiled
from crawler.windows import DAY_WINDOW_RE, NeverComes, cron_next, cron_valid

MAX_PATTERNS = 50
MAX_PATTERN_LENGTH = 500
PAGE_BUDGET_S = 1.0  # the time all the links of one page may spend in a job's patterns
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # fullmatch: "$" would let a final newline through
DURATION_RE = re.compile(r"^\s*(\d+)\s*([smhdw]?)\s*$")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_DURATION_S = 10 * 366 * 86400  # ten years: past it a duration is a mistake (and past a column's range)

# Why a job does not follow a link (the URL's exclusion reason when no job of its page follows it).
EXCLUDED_BY_PATTERN = notfollowed.JOB_PATTERN
PAGE_LIMIT = notfollowed.JOB_PAGE_LIMIT
JOB_PAUSED = notfollowed.JOB_PAUSED
JOB_STOPPED = notfollowed.JOB_STOPPED
OUTSIDE_WINDOW = notfollowed.JOB_OUTSIDE_WINDOW


class JobRuleError(ValueError):
    pass


def name_check(name: object) -> str:
    # fullmatch: `$` would let a trailing newline through.
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise JobRuleError("must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return name


def duration_seconds(value: object) -> int:
    """Seconds from 3600, "3600", "90m", "1h", "2d" or "1w", at most MAX_DURATION_S."""
    if isinstance(value, bool):
        raise JobRuleError("must be a duration such as 3600, 90m, 1h, 2d")
    if isinstance(value, int):
        seconds = value
    else:
        m = DURATION_RE.fullmatch(value) if isinstance(value, str) and len(value) < 40 else None
        if m is None:
            raise JobRuleError("must be a duration such as 3600, 90m, 1h, 2d")
        seconds = int(m.group(1)) * UNITS[m.group(2)]
    if seconds < 0:
        raise JobRuleError("must not be negative")
    if seconds > MAX_DURATION_S:
        raise JobRuleError(f"at most {MAX_DURATION_S // 86400} days")
    return seconds


def patterns_check(patterns: object) -> list[str]:
    """A job's include or exclude patterns: a list of at most MAX_PATTERNS regular expressions, each at most
    MAX_PATTERN_LENGTH characters, that compile within the bounds of crawler.userregex (checked in a child)."""
    if patterns is None:
        return []
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise JobRuleError("must be a list of regular expressions")
    if len(patterns) > MAX_PATTERNS:
        raise JobRuleError(f"at most {MAX_PATTERNS} patterns")
    for p in patterns:
        if not p:
            raise JobRuleError("a pattern must be a non-empty string")
        if len(p) > MAX_PATTERN_LENGTH:
            raise JobRuleError(f"a pattern longer than {MAX_PATTERN_LENGTH} characters")
    problems = compile_check(patterns)
    if problems:
        pattern, problem = next(iter(problems.items()))
        raise JobRuleError(f"{pattern[:60]!r}: {problem}" if pattern else problem)
    return list(patterns)


def url_path(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True)
class PathRules:
    """A job's include and exclude patterns. A URL may be followed ("") when no exclude pattern is found in
    its path and, when there are include patterns, one of them is."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)

    def reasons(self, urls: Sequence[str], *, budget_s: float = PAGE_BUDGET_S) -> list[str]:
        """Why the job does not follow each of `urls` ("" when it may), all of them within `budget_s`
        together (one page's links): once it is spent, the URLs not decided yet are set aside. The patterns
        are compiled here; the caller runs this in a bounded child (the module's docstring)."""
        if not self:
            return [""] * len(urls)
        end = clock.monotonic() + budget_s
        exclude = [compiled(p) for p in self.exclude]
        include = [compiled(p) for p in self.include]
        out = []
        for url in urls:
            out.append(_path_reason(url_path(url), include, exclude, end))
        return out

    def reason(self, url: str, *, timeout_s: float = PAGE_BUDGET_S) -> str:
        return self.reasons([url], budget_s=timeout_s)[0]


def _path_reason(path: str, include: list, exclude: list, end: float) -> str:
    def found(pattern) -> bool:
        left = end - clock.monotonic()
        if left <= 0:
            raise TimeoutError
        return pattern.search(path, timeout=left) is not None

    try:
        if any(found(p) for p in exclude):
            return EXCLUDED_BY_PATTERN
        if include and not any(found(p) for p in include):
            return EXCLUDED_BY_PATTERN
    except TimeoutError:
        return EXCLUDED_BY_PATTERN  # a pattern that cannot decide in time never lets a URL through
    return ""


def windows_check(windows: object) -> list[str]:
    """Time windows as "HH:MM-HH:MM" (22:00-06:00 runs past midnight; read by crawler.windows); an empty
    list: always."""
    if windows is None:
        return []
    if isinstance(windows, str):
        windows = [windows]
    if not isinstance(windows, list):
        raise JobRuleError('must be a list of "HH:MM-HH:MM"')
    out = []
    for w in windows:
        if not isinstance(w, str) or DAY_WINDOW_RE.match(w) is None:
            raise JobRuleError(f'{w!r} is not a time window "HH:MM-HH:MM"')
        out.append(w.replace(" ", ""))
    return out


def schedule_check(schedule: object) -> str:
    """A five-field cron expression whose next start can be computed: checked now, by computing it, so a
    schedule that parses but never comes ("0 0 31 2 *") is refused when written, not at each tick."""
    if schedule in (None, ""):
        return ""
    if not isinstance(schedule, str) or not cron_valid(schedule):
        raise JobRuleError('must be a cron expression of five fields, e.g. "0 2 * * *"')
    schedule_next(schedule, datetime.now(UTC))
    return schedule


def schedule_next(schedule: str, after: datetime) -> datetime:
    """The next start of the cron schedule after `after` (same time zone as `after`). JobRuleError when
    there is none (a date that never exists)."""
    try:
        return cron_next(schedule, after)
    except NeverComes as exc:
        raise JobRuleError(f"its next start cannot be found: it never comes ({exc})") from None


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
