"""Reading settings from the environment, failing loudly on a bad value.

Pure: no Django import, so the settings module and the tests share one parser and every error names
the variable that caused it ("CRAWL_CONNECT_TIMEOUT='abc': expected a number").
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass


class ConfigError(ValueError):
    """A setting from the environment has a value we cannot use."""


# C0/C1 controls and DEL. No setting needs one, and in a value that reaches a request (the user agent, a
# URL) a CR/LF would inject a header; so they are refused everywhere, not only where we know it matters.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Env:
    """A read-only view of an environment with typed getters."""

    values: Mapping[str, str]

    @classmethod
    def from_os(cls) -> Env:
        return cls(dict(os.environ))

    def _raw(self, name: str) -> str | None:
        value = self.values.get(name)
        if value is None or value.strip() == "":
            return None
        value = value.strip()
        bad = _CONTROL_RE.search(value)
        if bad is not None:
            # The value itself is not echoed: it may be a password, and it holds a control character.
            raise ConfigError(f"{name}: control character {bad.group()!r} at position {bad.start()} is not allowed")
        return value

    def str(self, name: str, default: str) -> str:
        raw = self._raw(name)
        return default if raw is None else raw

    def number(self, name: str, default: float, *, minimum: float = 0.0, maximum: float | None = None) -> float:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r}: expected a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(f"{name}={raw!r}: expected a finite number")
        if value < minimum:
            raise ConfigError(f"{name}={raw!r}: must be at least {minimum:g}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{name}={raw!r}: must be at most {maximum:g}")
        return value

    def integer(self, name: str, default: int | None, *, minimum: int = 0, maximum: int | None = None) -> int | None:
        raw = self._raw(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r}: expected a whole number") from None
        if value < minimum:
            raise ConfigError(f"{name}={raw!r}: must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{name}={raw!r}: must be at most {maximum}")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        raw = self._raw(name)
        if raw is None:
            return default
        lowered = raw.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name}={raw!r}: expected true or false")

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        raw = self._raw(name)
        if raw is None:
            return default
        if raw not in choices:
            raise ConfigError(f"{name}={raw!r}: expected one of {', '.join(choices)}")
        return raw

    def cidrs(self, name: str) -> tuple[str, ...]:
        """Comma or space separated CIDRs, validated; returned as normalised strings."""
        raw = self._raw(name)
        if raw is None:
            return ()
        networks = []
        for part in raw.replace(",", " ").split():
            try:
                networks.append(str(ipaddress.ip_network(part, strict=False)))
            except ValueError:
                raise ConfigError(f"{name}: {part!r} is not an IP network (e.g. 127.0.0.0/8)") from None
        return tuple(networks)

    def url(self, name: str, default: str, schemes: tuple[str, ...]) -> str:
        raw = self._raw(name)
        if raw is None:
            return default
        scheme = raw.split("://", 1)[0].lower() if "://" in raw else ""
        if scheme not in schemes:
            expected = ", ".join(s + "://" for s in schemes)
            if not scheme:
                raise ConfigError(f"{name} is not a URL (no scheme://): expected one starting with {expected}")
            # The scheme is what is wrong, so it is named; the rest may hold a password and is not echoed.
            raise ConfigError(f"{name}: the scheme {scheme + '://'!r} is not supported; expected {expected}")
        return raw
