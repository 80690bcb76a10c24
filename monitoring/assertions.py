"""Response assertions of HTTP monitors, the pure part: what a valid answer must also satisfy. A failing
assertion makes the check an error whose detail names the assertion.

One assertion a line (blank lines and lines starting with '#' are skipped):

    status in 200,204            the status is one of these (ranges as in accepted codes: 200-204)
    header cache-control         the header is present
    header x-version == 2        the header equals this (the value after '==', spaces trimmed)
    json $.status == "ok"        the JSON value at the path equals this JSON literal (a bare word: a string)
    json $.checks contains "db"  the array holds it, the string contains it, or the object has that key
    time < 800                   the response took less than this many milliseconds

A JSON path is ``$`` followed by ``.key`` and ``[index]`` steps (``$.services[0].state``). No Django or
Celery import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .accepted_codes import AcceptedCodes, AcceptedCodesError

MAX_ASSERTIONS = 20
MAX_JSON_BYTES = 1_000_000  # a body larger than this is not parsed (the assertion fails, saying so)
MAX_SHOWN = 60


class AssertionRuleError(ValueError):
    pass


@dataclass(frozen=True)
class Assertion:
    kind: str  # status, header, json, time
    text: str  # the line as written: what a failure names
    subject: str = ""  # header name, JSON path
    op: str = ""  # "", "==", "contains", "in", "<"
    value: Any = None

    @property
    def reads_response(self) -> bool:
        """Whether it reads what the server sent beyond its status and timing (headers, body)."""
        return self.kind in ("header", "json")


_STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[(\d{1,6})\]|\[\"([^\"]*)\"\]")
_LINE = {
    "status": re.compile(r"status\s+in\s+(?P<value>.+)", re.I),
    "header": re.compile(r"header\s+(?P<subject>[!#$%&'*+.^_`|~0-9A-Za-z-]+)(?:\s*(?P<op>==)\s*(?P<value>.*))?", re.I),
    "json": re.compile(r"json\s+(?P<subject>\$\S*)\s+(?P<op>==|contains)\s+(?P<value>.+)", re.I),
    "time": re.compile(r"time\s*<\s*(?P<value>\d+(?:\.\d+)?)\s*(?:ms)?", re.I),
}


def _path(text: str) -> tuple[str | int, ...]:
    if not text.startswith("$"):
        raise AssertionRuleError(f"JSON path {text!r} must start with $")
    steps: list[str | int] = []
    at = 1
    while at < len(text):
        m = _STEP.match(text, at)
        if m is None:
            raise AssertionRuleError(f"JSON path {text!r}: cannot read {text[at:]!r} (use .key and [index])")
        key, index, quoted = m.groups()
        steps.append(int(index) if index is not None else (key if key is not None else quoted))
        at = m.end()
    return tuple(steps)


def _literal(text: str) -> Any:
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word: the string itself


def assertions_parse(text: str) -> tuple[Assertion, ...]:
    """The assertions of a monitor's text; AssertionRuleError names the first line that is not one."""
    out = []
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word = line.split(None, 1)[0].lower()
        pattern = _LINE.get(word)
        m = pattern.fullmatch(line) if pattern else None
        if m is None:
            raise AssertionRuleError(
                f"line {number}: {line[:MAX_SHOWN]!r} is not an assertion (status in ..., header NAME [== VALUE], "
                "json $.path == VALUE | contains VALUE, time < MS)"
            )
        parts = m.groupdict()
        if word == "status":
            try:
                value = AcceptedCodes.parse(parts["value"])
            except AcceptedCodesError as exc:
                raise AssertionRuleError(f"line {number}: {exc}") from None
            out.append(Assertion("status", line, op="in", value=value))
        elif word == "header":
            op = parts.get("op") or ""
            out.append(Assertion("header", line, parts["subject"].lower(), op, (parts.get("value") or "").strip()))
        elif word == "json":
            out.append(Assertion("json", line, _path(parts["subject"]), parts["op"].lower(), _literal(parts["value"])))
        else:
            out.append(Assertion("time", line, op="<", value=float(parts["value"])))
    if len(out) > MAX_ASSERTIONS:
        raise AssertionRuleError(f"{len(out)} assertions, at most {MAX_ASSERTIONS}")
    return tuple(out)


_MISSING = object()


def _at(document: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        if isinstance(step, int) and isinstance(document, list) and step < len(document):
            document = document[step]
        elif isinstance(step, str) and isinstance(document, dict) and step in document:
            document = document[step]
        else:
            return _MISSING
    return document


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not _MISSING else "nothing"
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def assertion_failure(
    assertions: tuple[Assertion, ...], *, status: int | None, headers: Mapping[str, str], body: bytes, total_ms: float
) -> str | None:
    """Why the response fails the first failing assertion ("assertion 'LINE' failed: ..."), or None."""
    document: Any = _MISSING
    for a in assertions:
        why = None
        if a.kind == "status":
            if status is None or status not in a.value:
                why = f"status {status}"
        elif a.kind == "header":
            got = headers.get(a.subject)
            if got is None:
                why = "no such header"
            elif a.op == "==" and got.strip() != a.value:
                why = f"it is {got.strip()[:MAX_SHOWN]!r}"
        elif a.kind == "time":
            if total_ms >= a.value:
                why = f"took {total_ms:.0f} ms"
        else:
            if document is _MISSING:
                document = _json(body)
            if isinstance(document, _NotJson):
                why = document.why
            else:
                found = _at(document, a.subject)
                if a.op == "==" and (found is _MISSING or found != a.value):
                    why = f"found {_shown(found)}"
                elif a.op == "contains" and not _contains(found, a.value):
                    why = f"found {_shown(found)}"
        if why is not None:
            return f"assertion {a.text[: MAX_SHOWN * 2]!r} failed: {why}"
    return None


@dataclass(frozen=True)
class _NotJson:
    why: str


def _json(body: bytes) -> Any:
    if len(body) > MAX_JSON_BYTES:
        return _NotJson(f"body over {MAX_JSON_BYTES} bytes, not parsed")
    try:
        return json.loads(body.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return _NotJson("the body is not JSON")


def _contains(found: Any, value: Any) -> bool:
    if isinstance(found, list):
        return value in found
    if isinstance(found, str):
        return isinstance(value, str) and value in found
    if isinstance(found, dict):
        return isinstance(value, str) and value in found
    return False
