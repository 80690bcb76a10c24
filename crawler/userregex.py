r"""Regular expressions that users write (a job's include and exclude patterns, a monitor's content check):
compiled first in a child process with a hard stop and a memory allowance (crawler.child), never in the
process that saves them.

The `regex` module's own timeout bounds a search, not a compile, and it is checked only between steps of
the matcher. A repeat of repeats such as ``(?:x{65535}){65535}`` is twenty characters that expand at compile
time into more memory than the machine has: compiled in a web process it is a 500 or the process killed.
``compile_check`` is the one check every save path calls (crawler.jobrules for jobs, monitoring.content for
content checks); a pattern that passed it is cheap to compile again where it is used.

No Django or Celery import.
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

from .child import run_in_child

__all__ = ["COMPILE_MEMORY_BYTES", "COMPILE_TIMEOUT_S", "TOO_LARGE", "compile_check", "compiled"]

COMPILE_TIMEOUT_S = 2.0
COMPILE_MEMORY_BYTES = 256 * 1024 * 1024  # address space a compile (or a search) may add to its process
TOO_LARGE = (
    "the regular expression is too large to compile (repeats of repeats such as (?:x{1000}){1000} expand "
    "into every copy); simplify it"
)


def compiled(pattern: str) -> regex.Pattern:
    """`pattern` compiled, not cached: the module's cache sits behind a lock that another thread of a parent
    may have held at a fork, and a pattern compiled in a child is thrown away with it anyway."""
    return regex.compile(pattern, cache_pattern=False)


def _problems(patterns: Sequence[str]) -> dict[str, str]:
    """In the child: {pattern: regex's reason} for the patterns that do not compile."""
    out = {}
    for pattern in patterns:
        try:
            compiled(pattern)
        except regex.error as exc:
            out[pattern] = f"not a regular expression ({exc})"
    return out


def compile_check(patterns: Sequence[str]) -> dict[str, str]:
    """{pattern: why it cannot be used} for the patterns of `patterns` that do not compile, or not within
    COMPILE_TIMEOUT_S and COMPILE_MEMORY_BYTES; {} when every one does. One child for them all; when that
    child is stopped, the patterns are tried alone, one after another, up to the first one at fault (the
    message names it; a save is refused for one as for many)."""
    patterns = list(dict.fromkeys(patterns))
    if not patterns:
        return {}
    done = _in_child(patterns)
    if done is not None:
        return done
    if len(patterns) > 1:
        for pattern in patterns:
            if _in_child([pattern]) != {}:
                return compile_check([pattern])
    # Too big (memory), too slow (timeout), or it killed its process: all a pattern too large to use.
    return {patterns[0] if len(patterns) == 1 else "": TOO_LARGE}


def _in_child(patterns: list[str]) -> dict[str, str] | None:
    """_problems(patterns) in a bounded child; None when the child was stopped."""
    done = run_in_child(lambda: _problems(patterns), deadline_s=COMPILE_TIMEOUT_S, memory_bytes=COMPILE_MEMORY_BYTES)
    return done.value if done.ok else None
