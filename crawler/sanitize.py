"""Response data made safe to store, where it enters the system.

A server controls every byte of its status line, headers and bodies. Some of those bytes can't be
stored: PostgreSQL refuses a NUL in text (``A string literal cannot contain NUL``), a lone surrogate
can't be encoded as UTF-8, and a `Content-Length` of 2^63 overflows a bigint. One such value used to
fail the write of a whole batch, which then rolled back and was fetched again and again. So the
fetchers (crawler and monitor) pass what they read through here first: text loses NUL and the other
control characters and is bounded in length; integers are parsed strictly and dropped when out of
range. Nothing here raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "BIGINT_MAX",
    "MAX_HEADER_NAME",
    "MAX_HEADER_VALUE",
    "MAX_HEAD_BYTES",
    "clean_headers",
    "clean_head",
    "clean_line",
    "clean_label",
    "clean_text",
    "header_int",
    "terminal_safe",
]

BIGINT_MAX = 2**63 - 1
MAX_HEADER_NAME = 200
MAX_HEADER_VALUE = 4096
MAX_HEADERS = 200  # distinct header names kept from one response
# A request's or response's head (first line and header lines) as kept for the archive: a fetcher refuses
# response headers above 64 KiB, but a normal head is under 2 KiB, so 16 KiB keeps every real one whole
# and bounds what a header flood costs the page table.
MAX_HEAD_BYTES = 16 * 1024

# C0 controls and DEL, without tab; text that keeps its lines also keeps \n and \r.
_CONTROLS_LINE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_CONTROLS_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")
# Every C0 control, DEL and every C1 control: ESC (\x1b) and CSI (\x9b) start the sequences a terminal acts
# on (colours, cursor moves, window titles), BEL rings.
_CONTROLS_ALL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROLS_SHOWN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_DIGITS = re.compile(r"\s*([0-9]{1,30})\s*")


def clean_line(value: str, limit: int) -> str:
    """One line of text (a header value, a status reason, an error detail): no control characters but
    tab, no lone surrogates, at most `limit` characters."""
    value = _CONTROLS_LINE.sub("", value)
    if not value.isascii():
        value = _SURROGATES.sub("\ufffd", value)
    return value[:limit]


def clean_text(value: str, limit: int) -> str:
    """Text that keeps its lines (a robots.txt, a sitemap): like clean_line, with \\n and \\r kept."""
    value = _CONTROLS_TEXT.sub("", value)
    if not value.isascii():
        value = _SURROGATES.sub("\ufffd", value)
    return value[:limit]


def clean_label(value: str) -> str:
    """A short text a page gives about itself or a link (a title, a description, an anchor text): no control
    character at all, none kept for a later terminal, CSV or JSON reader to meet; no lone surrogates."""
    value = _CONTROLS_ALL.sub("", value)
    if not value.isascii():
        value = _SURROGATES.sub("\ufffd", value)
    return value


def terminal_safe(value: str) -> str:
    """Text for a terminal (or a file a terminal may show): each control character but tab and line ends
    shown as U+FFFD, so none written before its stored values were cleaned can move the cursor or rewrite
    the screen."""
    return _CONTROLS_SHOWN.sub("\ufffd", value)


def clean_headers(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Response headers as stored and compared: lower-cased names, values cleaned and bounded; a
    header whose name is empty once cleaned is dropped. Repeated names keep the first value, as the
    HTTP libraries' merged views do for the headers we read."""
    out: dict[str, str] = {}
    for name, value in items:
        key = clean_line(str(name), MAX_HEADER_NAME).strip().lower()
        if not key or key in out:
            continue
        if len(out) >= MAX_HEADERS:
            break
        out[key] = clean_line(str(value), MAX_HEADER_VALUE)
    return out


def clean_head(first_line: str, items: Iterable[tuple[str, str]], *, limit: int = MAX_HEAD_BYTES) -> str:
    """An HTTP head as stored for the archive: the first line, then "Name: value" lines in the order they
    were sent, repeated names kept, separated by CRLF (no blank line at the end). Cleaned like a header
    line; header lines that would pass `limit` characters are left out, so what is kept is whole."""
    lines = [clean_line(first_line, MAX_HEADER_VALUE)]
    size = len(lines[0])
    for name, value in items:
        key = clean_line(str(name), MAX_HEADER_NAME).strip()
        if not key:
            continue
        line = f"{key}: {clean_line(str(value), MAX_HEADER_VALUE)}"
        size += len(line) + 2
        if size > limit:
            break
        lines.append(line)
    return "\r\n".join(lines)


def header_int(value: str | None, *, maximum: int = BIGINT_MAX) -> int | None:
    """A non-negative integer header (Content-Length, Age …): the first of a comma-separated list,
    None when it is missing, not a plain decimal number, or above `maximum`."""
    if value is None:
        return None
    match = _DIGITS.fullmatch(value.split(",", 1)[0])
    if match is None:
        return None
    number = int(match.group(1))
    return number if number <= maximum else None
