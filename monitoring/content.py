"""Content checks, the pure part: text a health page must contain and text it must not, as
plain text or as a regular expression searched with a time bound.

The `regex` module, not `re`: it takes a timeout, so a catastrophic pattern on a large page costs at most
CONTENT_TIMEOUT_S of a check worker, never the worker.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

CONTENT_TIMEOUT_S = 0.5
MAX_SHOWN = 60


class ContentRuleError(ValueError):
    pass


@dataclass(frozen=True)
class ContentRule:
    must: str = ""
    must_not: str = ""
    is_regex: bool = False

    def __bool__(self) -> bool:
        return bool(self.must or self.must_not)


def rule_check(rule: ContentRule) -> None:
    """Raise ContentRuleError when a pattern does not compile (checked when the monitor is saved)."""
    if not rule.is_regex:
        return
    for name, pattern in (("must contain", rule.must), ("must not contain", rule.must_not)):
        if pattern:
            try:
                regex.compile(pattern)
            except regex.error as exc:
                raise ContentRuleError(f"{name}: not a regular expression ({exc})") from None


def _found(pattern: str, text: str, is_regex: bool, timeout_s: float) -> bool:
    if not is_regex:
        return pattern in text
    return regex.search(pattern, text, timeout=timeout_s) is not None


def _shown(pattern: str) -> str:
    return pattern if len(pattern) <= MAX_SHOWN else pattern[: MAX_SHOWN - 1] + "…"


def content_failure(body: bytes, rule: ContentRule, *, timeout_s: float = CONTENT_TIMEOUT_S) -> str | None:
    """Why this body fails the rule, or None when it passes. A search that runs out of time fails."""
    text = body.decode("utf-8", errors="replace")
    try:
        if rule.must and not _found(rule.must, text, rule.is_regex, timeout_s):
            return f"does not contain {_shown(rule.must)!r}"
        if rule.must_not and _found(rule.must_not, text, rule.is_regex, timeout_s):
            return f"contains {_shown(rule.must_not)!r}"
    except TimeoutError:
        return f"content check took longer than {timeout_s:g}s"
    except regex.error as exc:  # saved before validation existed
        return f"bad pattern: {exc}"
    return None
