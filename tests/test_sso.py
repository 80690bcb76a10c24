"""Optional single sign-on (issue 18): OpenID Connect configured purely from the environment, off by
default; a directory's groups mapped onto viewer / operator and the servers:<group> limits at each login."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import override_settings

from crawlcore.access import groups_from_directory, server_groups_of

from .test_config import _manage

OIDC_ENV = {
    "OIDC_RP_CLIENT_ID": "crawladmin",
    "OIDC_RP_CLIENT_SECRET": "s3cret",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://idp.example/auth",
    "OIDC_OP_TOKEN_ENDPOINT": "https://idp.example/token",
    "OIDC_OP_USER_ENDPOINT": "https://idp.example/userinfo",
    "OIDC_OP_JWKS_ENDPOINT": "https://idp.example/jwks",
}
MAPPING = {
    "OIDC_GROUPS_CLAIM": "groups",
    "OIDC_VIEWER_GROUPS": ["web-staff"],
    "OIDC_OPERATOR_GROUPS": ["web-ops"],
    "OIDC_SERVER_GROUP_PREFIX": "web-servers-",
}


def test_directory_groups_map_to_reader_groups():
    given = ["web-staff", "web-servers-physics", "web-servers-", "payroll", "", 7]
    assert groups_from_directory(given, viewer=["web-staff"], operator=["web-ops"], server_prefix="web-servers-") == {
        "viewer",
        "servers:physics",
    }
    assert groups_from_directory(["web-servers-x"], viewer=[], operator=[], server_prefix="") == set()


def test_off_by_default_and_on_with_the_environment(tmp_path):
    from django.conf import settings
    from django.urls import NoReverseMatch, reverse

    assert settings.OIDC_ENABLED is False  # no OIDC_RP_CLIENT_ID in the tests' environment
    with pytest.raises(NoReverseMatch):
        reverse("oidc_authentication_init")
    assert _manage(OIDC_ENV, tmp_path).returncode == 0


def test_half_a_configuration_is_refused_naming_what_is_missing(tmp_path):
    env = {k: v for k, v in OIDC_ENV.items() if k != "OIDC_OP_JWKS_ENDPOINT"}
    proc = _manage(env, tmp_path)
    assert proc.returncode != 0 and "OIDC_OP_JWKS_ENDPOINT must be set" in proc.stderr
    assert "s3cret" not in proc.stderr


@override_settings(**{k: v for k, v in OIDC_ENV.items()}, **MAPPING, OIDC_ENABLED=True)
def test_each_login_sets_the_reader_groups_the_directory_gives(db):
    from crawladmin.sso import DirectoryGroupsOIDCBackend

    backend = DirectoryGroupsOIDCBackend()
    user = backend.create_user({"email": "kim@uni.example", "groups": ["web-staff", "web-servers-physics"]})
    other = Group.objects.create(name="newsletter")
    user.groups.add(other)
    assert set(user.groups.values_list("name", flat=True)) == {"viewer", "servers:physics", "newsletter"}
    assert server_groups_of(User.objects.get(id=user.id)) == frozenset({"physics"})

    backend.update_user(user, {"email": "kim@uni.example", "groups": ["web-ops"]})  # moved in the directory
    assert set(user.groups.values_list("name", flat=True)) == {"operator", "newsletter"}

    backend.update_user(user, {"email": "kim@uni.example", "groups": "payroll"})  # in no mapped group
    assert set(user.groups.values_list("name", flat=True)) == {"newsletter"}
