"""Optional single sign-on: OpenID Connect configured purely from the environment, off by default; a
directory's groups mapped onto viewer / operator and the servers:<group> limits at each login; users found
by the provider's subject, never by an unverified e-mail; https endpoints; sessions asked again. Logins run
the real code flow against a provider stub on loopback (testweb.oidc)."""

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
    user = backend.create_user(
        {"sub": "kim-1", "email": "kim@uni.example", "groups": ["web-staff", "web-servers-physics"]}
    )
    other = Group.objects.create(name="newsletter")
    user.groups.add(other)
    assert set(user.groups.values_list("name", flat=True)) == {"viewer", "servers:physics", "newsletter"}
    assert server_groups_of(User.objects.get(id=user.id)) == frozenset({"physics"})

    backend.update_user(user, {"email": "kim@uni.example", "groups": ["web-ops"]})  # moved in the directory
    assert set(user.groups.values_list("name", flat=True)) == {"operator", "newsletter"}

    backend.update_user(user, {"email": "kim@uni.example", "groups": "payroll"})  # in no mapped group
    assert set(user.groups.values_list("name", flat=True)) == {"newsletter"}


# --------------------------------------------------------------------------------------------------
# Logins through the code flow, against a provider on loopback

CLIENT = {"OIDC_RP_CLIENT_ID": "crawladmin", "OIDC_RP_CLIENT_SECRET": "a-client-secret-of-at-least-32-bytes!"}


@pytest.fixture
def idp(settings, db):
    from testweb.oidc import provider

    with provider(CLIENT["OIDC_RP_CLIENT_ID"], CLIENT["OIDC_RP_CLIENT_SECRET"]) as op:
        for name, value in {**CLIENT, **op.endpoints(), **MAPPING}.items():
            setattr(settings, name, value)
        settings.OIDC_ENABLED, settings.OIDC_RP_SIGN_ALGO, settings.OIDC_TIMEOUT = True, "HS256", 10.0
        settings.OIDC_LINK_VERIFIED_EMAIL = False
        settings.ROOT_URLCONF = "tests.sso_urls"
        yield op


def sign_in(op, claims: dict):
    """One login: the provider's code back at the callback, exchanged and verified by the backend."""
    from django.contrib.sessions.backends.db import SessionStore
    from django.test import RequestFactory

    from crawladmin.sso import DirectoryGroupsOIDCBackend

    request = RequestFactory().get("/oidc/callback/", {"code": op.code_for(claims, nonce="n-1"), "state": "s-1"})
    request.session = SessionStore()
    return DirectoryGroupsOIDCBackend().authenticate(request, nonce="n-1")


@pytest.fixture
def local_admin(db):
    return User.objects.create_superuser("admin", email="admin@corp.example", password="pw-not-secret")


def test_an_unverified_email_claim_does_not_take_over_a_local_account(idp, local_admin, settings):
    claims = {"sub": "attacker", "email": "ADMIN@corp.example", "email_verified": False, "groups": ["web-staff"]}
    user = sign_in(idp, claims)
    assert user is not None and user.pk != local_admin.pk
    assert not user.is_superuser and user.email == ""  # the address was not vouched for: not kept
    settings.OIDC_LINK_VERIFIED_EMAIL = True  # linking allowed, but this address is not verified
    again = sign_in(idp, {**claims, "email_verified": "false"})
    assert again.pk == user.pk and idp.token_requests == 2


def test_a_user_is_found_by_the_providers_subject(idp):
    first = sign_in(idp, {"sub": "u-42", "email": "kim@uni.example", "email_verified": True, "groups": ["web-ops"]})
    assert first.sign_on.subject == "u-42" and first.email == "kim@uni.example"
    moved = sign_in(idp, {"sub": "u-42", "email": "kim.lee@uni.example", "email_verified": True})
    assert moved.pk == first.pk  # a new address at the provider: the same user
    other = sign_in(idp, {"sub": "u-43", "email": "kim@uni.example", "email_verified": True})
    assert other.pk != first.pk  # the same address under another subject: someone else
    assert sign_in(idp, {"email": "kim@uni.example", "email_verified": True}) is None  # no subject: refused
    assert sign_in(idp, {"sub": "s-0", "email": "x@uni.example"}).sign_on.subject == "s-0"


def test_a_verified_email_links_a_local_account_only_when_a_setting_allows_it(idp, local_admin, settings):
    local = User.objects.create_user("kim", email="Kim@uni.example", password="pw-not-secret")
    claims = {"sub": "u-7", "email": "kim@uni.example", "email_verified": True, "groups": ["web-staff"]}
    assert sign_in(idp, claims).pk != local.pk  # off by default
    settings.OIDC_LINK_VERIFIED_EMAIL = True
    linked = sign_in(idp, {**claims, "sub": "u-8"})
    assert linked.pk == local.pk and linked.sign_on.subject == "u-8"
    assert sign_in(idp, {**claims, "sub": "u-8", "email": "new@uni.example"}).pk == local.pk
    # A local superuser is never taken over by a directory account, verified or not.
    admin = sign_in(idp, {"sub": "u-9", "email": "admin@corp.example", "email_verified": True})
    assert admin.pk != local_admin.pk and not admin.is_superuser


def test_the_providers_endpoints_must_be_https(tmp_path):
    env = {**OIDC_ENV, "OIDC_OP_TOKEN_ENDPOINT": "http://idp.example/token"}
    proc = _manage(env, tmp_path)
    assert proc.returncode != 0
    assert "OIDC_OP_TOKEN_ENDPOINT must be an https:// URL" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    loopback = {**OIDC_ENV, "OIDC_OP_TOKEN_ENDPOINT": "http://127.0.0.1:9/token"}  # a provider on this machine
    assert _manage(loopback, tmp_path).returncode == 0


def test_single_sign_on_sessions_are_asked_again(tmp_path):
    import os
    import subprocess
    import sys

    from .test_config import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_"))}
    env.update(CRAWLADMIN_DATA_DIR=str(tmp_path), **OIDC_ENV)
    code = (
        "from django.conf import settings as s; "
        "print('mozilla_django_oidc.middleware.SessionRefresh' in s.MIDDLEWARE, s.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS)"
    )
    proc = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout.split()[-2:] == ["True", "900"], proc.stderr
