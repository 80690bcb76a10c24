"""How the dashboard orders servers: by the name people see, the way people sort names (pure).

``natural_key("127.0.1.10") > natural_key("127.0.1.9")``: runs of digits compare as numbers, so addresses
sort by number and "web2" comes before "web10"; letters compare without case.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple:
    """A sort key: text and number runs alternating (re.split with a group always starts with a text run,
    so every position holds the same type in every key and two keys always compare)."""
    parts = _DIGITS.split(text.casefold())
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts))
