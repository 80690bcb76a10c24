r"""Content checks, the pure part: text a health page must contain and text it must not, as
plain text or as a regular expression.

A regular expression is an operator's program run on a stranger's page, so it runs in a child process
(crawler.child) with a hard stop and a memory allowance: compiling one (at save, through
crawler.userregex.compile_check, and again when checked), searching within CONTENT_TIMEOUT_S. The `regex` module's
own timeout is still passed, but it is checked only between steps of the matcher: a pattern such as
``\p{L}*\d$`` runs for seconds on a large page past it, and a repeat of repeats such as
``(?:x{65535}){65535}`` is expanded at compile time into more memory than the machine has.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

from crawler.child import run_in_child
from crawler.userregex import COMPILE_MEMORY_BYTES, compile_check, compiled

CONTENT_TIMEOUT_S = 0.5
HARD_STOP_AFTER_S = 0.25
MAX_PATTERN_CHARS = 2000
MAX_SHOWN = 60


class ContentRuleError(ValueError):
    pass


@dataclass(frozen=True)
class ContentRule:
    must: str = ""
    must_not: str = ""
    is_regex: bool = False
    rendered: bool = False  # checked against the page as a browser renders it (crawlcore.services.render)

    def __bool__(self) -> bool:
        return bool(self.must or self.must_not)


def _compile(pattern: str) -> regex.Pattern:
    # Not cached: the module's cache sits behind a lock that another thread of the parent may have held at
    # the fork, and a pattern compiled in a child is thrown away with it anyway.
    return regex.compile(pattern, cache_pattern=False)


def rule_check(rule: ContentRule) -> None:
    """Raise ContentRuleError when a pattern does not compile, or not within the bounds of crawler.userregex
    (checked in a child when the monitor is saved)."""
    if not rule.is_regex:
        return
    for name, pattern in (("must contain", rule.must), ("must not contain", rule.must_not)):
        if not pattern:
            continue
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ContentRuleError(f"{name}: a regular expression of at most {MAX_PATTERN_CHARS} characters")
        problem = compile_check([pattern]).get(pattern)
        if problem:
            raise ContentRuleError(f"{name}: {problem}")


def _found(pattern: str, text: str, is_regex: bool, timeout_s: float) -> bool:
    if not is_regex:
        return pattern in text
    return compiled(pattern).search(text, timeout=timeout_s) is not None


def _shown(pattern: str) -> str:
    return pattern if len(pattern) <= MAX_SHOWN else pattern[: MAX_SHOWN - 1] + "…"


def _failure(text: str, rule: ContentRule, timeout_s: float) -> str | None:
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


def content_failure(body: bytes, rule: ContentRule, *, timeout_s: float = CONTENT_TIMEOUT_S) -> str | None:
    """Why this body fails the rule, or None when it passes. A search that runs out of time (or out of
    its memory allowance) fails."""
    text = body.decode("utf-8", errors="replace")
    if not rule.is_regex:
        return _failure(text, rule, timeout_s)
    # The text is decoded here, once: the child reads the parent's copy of it.
    # The hard stop comes a little after regex's own timeout, which ends most searches itself (the cost of
    # starting the child is not the pattern's).
    done = run_in_child(
        lambda: _failure(text, rule, timeout_s),
        deadline_s=timeout_s + HARD_STOP_AFTER_S,
        memory_bytes=COMPILE_MEMORY_BYTES,
    )
    if done.ok:
        return done.value
    if done.error == "memory":
        return "content check ran out of memory (the pattern is too large)"
    return f"content check took longer than {timeout_s:g}s"
