"""API tokens: made, shown once, stored hashed, and found again from a request's bearer header."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.utils import timezone

from .models import ApiToken

LAST_USED_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often per token


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", errors="replace")).hexdigest()


def api_token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """A new token for `user`: the row and the token itself, which is not stored and cannot be shown again."""
    token = ApiToken.PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(user=user, name=name, key_hash=token_hash(token), shown=token[:10])
    return row, token


def api_token_user(token: str):
    """The active user of this token, or None."""
    if not token.startswith(ApiToken.PREFIX) or len(token) > 200:
        return None
    row = ApiToken.objects.select_related("user").filter(key_hash=token_hash(token)).first()
    if row is None or not row.user.is_active:
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_EVERY:
        ApiToken.objects.filter(id=row.id).update(last_used_at=now)
    return row.user
