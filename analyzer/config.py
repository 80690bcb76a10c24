"""The analyzer's settings parser (pure; crawladmin/settings_env.py calls it inside `_load()`)."""

from __future__ import annotations

import re

from crawler.config import ConfigError, Env

_TLD_RE = re.compile(r"[a-z]{2,63}|xn--[a-z0-9-]{1,59}")


def national_tld(env: Env, name: str, default: str) -> str:
    """A top-level domain without dots ("kr", "jp"); a leading dot is forgiven, case is ignored."""
    raw = env.str(name, default)
    value = raw.strip().lstrip(".").lower()
    if not _TLD_RE.fullmatch(value):
        raise ConfigError(f"{name}={raw!r}: expected a top-level domain such as kr")
    return value
