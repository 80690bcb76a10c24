"""Optional single sign-on with OpenID Connect (mozilla-django-oidc), configured purely from the
environment and off unless OIDC_RP_CLIENT_ID is set (crawladmin.settings). `/oidc/authenticate/` starts a
login.

Who is who: a user is found by the provider's subject (the `sub` claim), stored at the first login
(dashboard.models.SignOnIdentity), never by e-mail alone: anyone can put any address in a claim. A first
login takes over the local account with the same e-mail only when OIDC_LINK_VERIFIED_EMAIL is true, the
provider says the address is verified (`email_verified` true), exactly one such account exists, it has no
subject yet, and it is not a superuser (a local superuser stays local). Otherwise a first login makes a new
user, named after the subject, with the e-mail kept only when verified.

What each may read: at every login the user gets the reader groups its directory groups map to
(crawlcore.access.groups_from_directory): OIDC_VIEWER_GROUPS and OIDC_OPERATOR_GROUPS name the directory
groups of viewers and operators, OIDC_SERVER_GROUP_PREFIX the prefix of directory groups that limit a
reader to a server group ("web-servers-physics" -> servers:physics). A user whose directory groups map to
none reads nothing (403). A session asks the provider again after OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS
(SessionRefresh), so a user removed in the directory keeps no long session.

The provider's endpoints must be https (plain http only on this machine, for a test provider).
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from crawlcore.access import groups_from_directory, reader_groups_set
from dashboard.models import SignOnIdentity

MAX_SUBJECT = 255


def subject_of(claims: dict) -> str | None:
    sub = claims.get("sub")
    return sub if isinstance(sub, str) and 0 < len(sub) <= MAX_SUBJECT else None


def verified_email(claims: dict) -> str:
    """The claims' e-mail when the provider vouches for it (`email_verified` true), else ""."""
    email = claims.get("email")
    verified = claims.get("email_verified")
    if isinstance(verified, str):  # some providers send the JSON boolean as a string
        verified = verified.strip().lower() == "true"
    return email.strip() if verified is True and isinstance(email, str) else ""


class DirectoryGroupsOIDCBackend(OIDCAuthenticationBackend):
    def get_userinfo(self, access_token, id_token, payload):
        claims = super().get_userinfo(access_token, id_token, payload)
        # The userinfo answer must be about the subject of the verified ID token (OpenID Connect Core 5.3.2).
        if not isinstance(claims, dict) or subject_of(claims) is None or claims["sub"] != payload.get("sub"):
            raise SuspiciousOperation("the userinfo subject is not the ID token's")
        return claims

    def verify_claims(self, claims: dict) -> bool:
        return subject_of(claims) is not None

    def filter_users_by_claims(self, claims: dict):
        User = get_user_model()
        subject = subject_of(claims)
        if subject is None:
            return User.objects.none()
        known = User.objects.filter(sign_on__subject=subject)
        if known.exists():
            return known
        email = verified_email(claims)
        if not (settings.OIDC_LINK_VERIFIED_EMAIL and email):
            return User.objects.none()
        # Linked below (update_user) when exactly one matches; two or more refuse the login.
        return User.objects.filter(email__iexact=email, sign_on__isnull=True, is_superuser=False)

    def get_username(self, claims: dict) -> str:
        # Local user names cannot hold ":" (Django's validator), so no local account can be named this.
        return "sso:" + hashlib.sha256(subject_of(claims).encode()).hexdigest()[:32]

    def create_user(self, claims: dict):
        with transaction.atomic():
            user = get_user_model().objects.create_user(self.get_username(claims), email=verified_email(claims))
            SignOnIdentity.objects.create(subject=subject_of(claims), user=user)
        self._groups_sync(user, claims)
        return user

    def update_user(self, user, claims: dict):
        SignOnIdentity.objects.get_or_create(user=user, defaults={"subject": subject_of(claims)})
        self._groups_sync(user, claims)
        return user

    def _groups_sync(self, user, claims: dict) -> None:
        given = claims.get(settings.OIDC_GROUPS_CLAIM) or []
        if isinstance(given, str):  # some providers send a single group as a string
            given = [given]
        names = groups_from_directory(
            given if isinstance(given, list) else [],
            viewer=settings.OIDC_VIEWER_GROUPS,
            operator=settings.OIDC_OPERATOR_GROUPS,
            server_prefix=settings.OIDC_SERVER_GROUP_PREFIX,
        )
        reader_groups_set(user=user, names=names)
