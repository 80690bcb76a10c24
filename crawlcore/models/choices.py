"""The choices of a model field drawn from one of the pure core's enums (a URL's state, an agent, a status
category): the stored value is the enum's, its label the member's name in words, so the core's names and the
database's agree without a second list to keep in step."""

from __future__ import annotations


def enum_choices(enum_cls) -> list[tuple[str, str]]:
    return [(member.value, member.name.replace("_", " ").title()) for member in enum_cls]
