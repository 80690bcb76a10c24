"""Every dashboard, analyzer and API URL answers junk parameters with 400 or 404, never 500:
the URLconf walked (tests/junkwalk.py) as a superuser and with the API token, on SQLite here and on
PostgreSQL, where a NUL in a parameter used to reach the database."""

from __future__ import annotations

import json
import os

import pytest
from django.contrib.auth.models import User
from django.test import Client

from crawlcore.models import Server
from testweb.cluster import manage, postgres_database

from . import junkwalk
from .test_dashboard import _fresh_cache, site  # noqa: F401  (fixtures)


def _client(superuser: User | None = None, token: str = "") -> Client:
    client = Client(raise_request_exception=False, headers={"Authorization": f"Bearer {token}"} if token else {})
    if superuser is not None:
        client.force_login(superuser)
    return client


def test_the_walk_covers_every_page():
    urls = junkwalk.urls()
    for path in ("/dashboard/", "/dashboard/servers/1/", "/dashboard/dead-links/1/", "/analyzer/", "/metrics"):
        assert path in urls
    assert "/api/servers" in urls and "/api/summary" in urls


def test_junk_never_gives_a_server_error_on_sqlite(db, site, settings):  # noqa: F811
    from dashboard.tokens import api_token_create

    settings.CRAWLADMIN_API_TOKEN = "t0ken"
    root = User.objects.create_superuser("root", password="pw-not-secret")
    assert junkwalk.walk(_client(root)) == {}
    # The read-only API takes the one configured token; /api/v1/ takes a user's own token.
    legacy = junkwalk.walk(_client(token="t0ken"))
    assert {url: status for url, status in legacy.items() if not url.startswith("/api/v1/")} == {}
    _, user_token = api_token_create(user=root, name="junk walk")
    mine = junkwalk.walk(_client(token=user_token))
    assert {url: status for url, status in mine.items() if url.startswith("/api/v1/")} == {}


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/dashboard/?offset=%C2%B2", 400),
        ("/dashboard/grid.json?offset=-1", 400),
        ("/dashboard/?group=%00", 400),
        ("/dashboard/servers/9223372036854775808/", 404),
        ("/dashboard/servers/999999999999999999999999999999/", 404),
        ("/dashboard/dead-links/{id}/?after=%C2%B9-%C2%B2", 400),
        ("/api/servers?offset=%C2%B2", 400),
        ("/api/servers?limit=99999999999", 400),
        ("/dashboard/heatmap/?group=a%00", 400),
    ],
)
def test_junk_values_of_known_parameters_are_bad_requests(db, url, status):
    root = User.objects.create_superuser("root", password="pw-not-secret")
    server = Server.objects.create(scheme="http", host="a.example", port=80)
    assert _client(root).get(url.format(id=server.id)).status_code == status


WALK_ON_POSTGRES = """
import json
from django.contrib.auth.models import User
from django.test import Client

from crawlcore.models import Server
from django.test.utils import setup_test_environment
from crawlcore.models import Server
from tests import junkwalk
setup_test_environment()
Server.objects.create(scheme="http", host="a.example", port=80, group="uni")
client = Client(raise_request_exception=False)
client.force_login(User.objects.create_superuser("root", password="pw-not-secret"))
print(json.dumps(junkwalk.walk(client)))
"""


@pytest.mark.integration
def test_junk_never_gives_a_server_error_on_postgres(tmp_path):
    with postgres_database() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "junk-test-" * 5,
            "DJANGO_SECURE": "false",
            "CRAWLADMIN_DATA_DIR": str(tmp_path),
        }
        manage(env, "migrate", "--verbosity", "0")
        out = manage(env, "shell", "-c", WALK_ON_POSTGRES).stdout
        assert json.loads(out.strip().splitlines()[-1]) == {}
