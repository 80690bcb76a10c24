"""Logins: throttled (django-axes: failed logins per user name and address lock that pair out), sessions that
last a working day rather than two weeks, and a secret key long enough to sign them outside the embedded
mode."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User

from .test_config import _manage

pytestmark = pytest.mark.django_db

LOGIN = "/dashboard/login/"


@pytest.fixture
def kim():
    user = User.objects.create_user("kim", password="the-right-password")
    user.groups.add(Group.objects.get(name="viewer"))
    return user


def attempt(client, username: str, password: str):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR="127.0.0.9")


def test_the_right_password_is_refused_after_too_many_wrong_ones(client, kim):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        assert attempt(client, "kim", "guess").status_code in (200, 429)
    locked = attempt(client, "kim", "the-right-password")
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    assert client.get("/dashboard/").status_code == 302  # still sent to the login page

    # Another user at the same address is not locked out by kim's failures.
    User.objects.create_user("lee", password="lees-password").groups.add(Group.objects.get(name="viewer"))
    assert attempt(client, "lee", "lees-password").status_code == 302


def test_a_success_before_the_limit_starts_the_count_again(client, kim):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "kim", "guess")
    assert attempt(client, "kim", "the-right-password").status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "kim", "guess")
    assert attempt(client, "kim", "the-right-password").status_code == 302


def test_a_session_lasts_a_working_day_by_default(client, kim):
    assert settings.SESSION_COOKIE_AGE == 10 * 3600
    response = attempt(client, "kim", "the-right-password")
    assert response.cookies[settings.SESSION_COOKIE_NAME]["max-age"] == 10 * 3600


@pytest.mark.parametrize(
    ("key", "refused"),
    [
        ("short", True),
        ("x" * 60, True),
        ("k3y-" * 12, True),
        ("a-random-enough-key-0123456789-abcdefghijklmnopqrstu", False),
    ],
)
def test_a_secret_key_of_fifty_characters_is_required_outside_the_embedded_mode(tmp_path, key, refused):
    proc = _manage({"DATABASE_URL": "postgres://u:p@127.0.0.1:9/x", "DJANGO_SECRET_KEY": key}, tmp_path)
    said = "DJANGO_SECRET_KEY must be set, at least 50 characters" in proc.stderr
    assert said == refused, proc.stderr
    if refused:
        assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1
        assert key not in proc.stderr


def test_the_embedded_mode_makes_its_own_long_key(tmp_path):
    assert _manage({}, tmp_path).returncode == 0
    assert len((tmp_path / "secret_key").read_text().strip()) >= 50
