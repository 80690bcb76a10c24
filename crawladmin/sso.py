"""Optional single sign-on with OpenID Connect (mozilla-django-oidc), configured purely from the
environment and off unless OIDC_RP_CLIENT_ID is set (crawladmin.settings). `/oidc/authenticate/` starts a
login; the provider's user is matched by e-mail, created at the first login, and at every login gets the
reader groups its directory groups map to (crawlcore.access.groups_from_directory): OIDC_VIEWER_GROUPS
and OIDC_OPERATOR_GROUPS name the directory groups of viewers and operators, OIDC_SERVER_GROUP_PREFIX
the prefix of directory groups that limit a reader to a server group ("web-servers-physics" ->
servers:physics). A user whose directory groups map to none reads nothing (403).
"""

from __future__ import annotations

from django.conf import settings
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from crawlcore.access import groups_from_directory, reader_groups_set


class DirectoryGroupsOIDCBackend(OIDCAuthenticationBackend):
    def create_user(self, claims: dict):
        user = super().create_user(claims)
        self._groups_sync(user, claims)
        return user

    def update_user(self, user, claims: dict):
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
