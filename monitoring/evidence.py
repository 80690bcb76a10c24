"""Evidence of a confirmed outage, the pure part: what is kept of the failing answer and how it reads.

No Django import: monitoring.services.evidence stores what these functions decide.

* ``head_mask``: a head (status line and headers, CRLF-separated) with its secrets masked, as a channel's
  destination is shown (alerts.destinations: the secret part becomes ``****``, what names it stays).
* ``body_text``: the first bytes of a body as text, decoded with the charset its content type names;
  None for a body that is not text (it is kept as bytes).
* ``excerpt``: at most N characters of that text on one line, every control character dropped: what an
  alert quotes.
* ``slowest_phase`` and ``difference``: the one-line summaries the incident and its alert show.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "PHASES", "Answer", "body_text", "difference", "excerpt", "head_headers", "head_mask", "head_status",
    "slowest_phase",
]  # fmt: skip

PHASES = ("dns", "connect", "tls", "first_byte", "body")  # timings_ms's keys besides total, in order
MASK = "****"

# Header names whose value is a credential or a session (or may be): the value is masked, its name kept.
_SECRET_NAME = re.compile(r"authorization|cookie|token|secret|password|passwd|api[-_]?key|session|signature|csrf")
# Cookie and Set-Cookie: each cookie's name stays (it says which session), its value does not.
_COOKIE_PAIR = re.compile(r"(^|;\s*)([^=;\s]+)=([^;]*)")
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/problem")
_TEXT_SUFFIXES = ("+json", "+xml")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SPACES = re.compile(r"\s+")


def _mask_value(name: str, value: str) -> str:
    lower = name.lower()
    if lower in ("cookie", "set-cookie"):
        # Set-Cookie's attributes (path, expiry) are masked with the rest: no secret, but no matter.
        return _COOKIE_PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}={MASK}", value)
    if lower in ("authorization", "proxy-authorization"):
        scheme = value.split(" ", 1)[0] if " " in value else ""
        return f"{scheme} {MASK}".strip()
    if _SECRET_NAME.search(lower):
        return MASK
    return value


def head_mask(head: str) -> str:
    """The head with every secret header's value masked; the first line (request or status line) as is."""
    if not head:
        return head
    lines = head.split("\r\n")
    out = [lines[0]]
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        out.append(f"{name}: {_mask_value(name, value.strip())}" if sep else line)
    return "\r\n".join(out)


def head_headers(head: str) -> list[tuple[str, str]]:
    """A stored head's headers as (name, value) pairs, in order, repeats kept."""
    pairs = []
    for line in head.split("\r\n")[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip():
            pairs.append((name.strip(), value.strip()))
    return pairs


def head_status(head: str) -> int | None:
    parts = head.split("\r\n", 1)[0].split(None, 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() and len(parts[1]) == 3 else None


def _charset(content_type: str) -> str | None:
    match = re.search(r"charset\s*=\s*\"?([\w.:-]+)", content_type, re.IGNORECASE)
    if not match:
        return None
    try:
        return codecs.lookup(match.group(1)).name
    except LookupError:
        return None


def is_text(content_type: str, body: bytes) -> bool:
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind:
        return kind.startswith(_TEXT_TYPES) or kind.endswith(_TEXT_SUFFIXES)
    return b"\x00" not in body[:1024]  # no type said: text unless it looks binary


def body_text(body: bytes, content_type: str) -> str | None:
    """The body decoded with its content type's charset (UTF-8 when none is named, bad bytes replaced);
    None when the content type is not text: such a body is shown as its size and kept as bytes."""
    if not is_text(content_type, body):
        return None
    return body.decode(_charset(content_type) or "utf-8", errors="replace")


def excerpt(text: str, limit: int = 300) -> str:
    """At most `limit` characters on one line: every control character (and the bidirectional overrides
    that could make it read otherwise) gone, runs of white space one space."""
    flat = _SPACES.sub(" ", _CONTROLS.sub(" ", text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def slowest_phase(timings_ms: Mapping[str, float | None]) -> tuple[str, float] | None:
    """The phase that took longest, with its milliseconds; None when no phase was measured."""
    measured = [(name, timings_ms[name]) for name in PHASES if timings_ms.get(name) is not None]
    if not measured:
        return None
    name, ms = max(measured, key=lambda p: p[1])  # type: ignore[arg-type,return-value]
    return name, float(ms)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Answer:
    """What an answer was, as far as it is known, for comparing two of them."""

    status: int | None = None
    size: int | None = None
    checksum: str = ""
    content_type: str = ""
    server: str = ""


def difference(good: Answer | None, bad: Answer) -> str:
    """One line saying what differs between the last good answer and the failing one."""
    if good is None:
        return "no good answer of this URL is on record"
    parts = []
    if good.status != bad.status:
        parts.append(f"status {good.status or 'none'} → {bad.status or 'no answer'}")
    if good.size is not None and bad.size is not None and good.size != bad.size:
        parts.append(f"size {good.size} → {bad.size} bytes")
    if good.checksum and bad.checksum and good.checksum != bad.checksum:
        parts.append("checksum differs")
    if good.content_type and bad.content_type and _kind(good.content_type) != _kind(bad.content_type):
        parts.append(f"content type {_kind(good.content_type)} → {_kind(bad.content_type)}")
    if good.server and bad.server and good.server != bad.server:
        parts.append(f"server {good.server} → {bad.server}")
    return "; ".join(parts) if parts else "the same status, size and headers as the last good answer"


def _kind(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()
