"""Security: deploy checks, no default credentials, authentication on the API and /metrics, CSRF, escaped
scraped text, and the private-address guard on by default."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
import zlib

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.utils import timezone

from crawladmin.management.commands.demo import Command as DemoCommand
from crawlcore.models import Page, Server, StatusCheck, Url, UrlEvent
from crawlcore.services.load import load_server_batch
from crawlcore.services.urls import NewUrl, urls_insert
from crawlcore.services.visit import address_check_for
from crawler.fetch import Fetcher
from crawler.http import FailureKind, FetchPolicy

from .crawlcheck import ROOT, clean_env

XSS = "<script>alert('xss')</script>"
XSS_ATTR = '"><img src=x onerror=alert(1)>'


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


# --- deployment settings ------------------------------------------------------------------------------


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = clean_env(
        CRAWLADMIN_DATA_DIR=str(tmp_path),
        DATABASE_URL="postgres://crawladmin:pw@127.0.0.1:5432/crawladmin",  # not connected to by `check`
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_DEBUG="false",
        DJANGO_ALLOWED_HOSTS="crawl.example.org",
    )
    proc = _manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert proc.returncode == 0, proc.stderr
    assert "no issues" in proc.stdout + proc.stderr


def test_embedded_mode_stays_plain_http(settings, client):
    """The demo is served over http://127.0.0.1: no redirect, no secure-only cookies."""
    assert not settings.SECURE_SSL_REDIRECT and not settings.SESSION_COOKIE_SECURE
    assert not settings.CSRF_COOKIE_SECURE and settings.SECURE_HSTS_SECONDS == 0
    assert client.get("/admin/login/").status_code == 200


@pytest.mark.django_db
@override_settings(SECURE_SSL_REDIRECT=True)
def test_https_redirect_spares_machine_endpoints(client):
    assert client.get("/admin/login/").status_code == 301
    assert client.get("/healthz").status_code == 200  # the container's health probe speaks plain http
    assert client.get("/api/summary").status_code == 401  # judged, not redirected


def test_tls_proxy_header_and_trusted_origins_come_from_the_environment(tmp_path):
    env = clean_env(
        CRAWLADMIN_DATA_DIR=str(tmp_path),
        DJANGO_SECURE="true",
        DJANGO_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
        DJANGO_CSRF_TRUSTED_ORIGINS="https://crawl.example.org",
    )
    code = (
        "from django.conf import settings as s; "
        "print(s.SECURE_PROXY_SSL_HEADER, s.CSRF_TRUSTED_ORIGINS, s.SESSION_COOKIE_SECURE, s.SECURE_HSTS_SECONDS)"
    )
    proc = _manage(env, "shell", "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip().splitlines()[-1]
        == "('HTTP_X_FORWARDED_PROTO', 'https') ['https://crawl.example.org'] True 31536000"
    )


# --- credentials --------------------------------------------------------------------------------------

_CREDENTIAL = re.compile(
    r"""(?ix)(password|passwd|secret|token|api_key)["']?\s*[:=]\s*["'](?!change-me)[^"'\s$]{3,}["']"""
    r"""|set_password\(\s*["']|--password[ =]"""
)
# user:password@ inside a URL, in code and configuration (documentation shows placeholders such as user:pw).
_URL_CREDENTIAL = re.compile(r"""://[^/\s:@"']+:(?!change-me)[^@/\s"'$<{]+@""")


def test_no_default_credentials_in_the_repository():
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    hits = []
    for name in files:
        if name.startswith(("tests/", "bench/")) or name.endswith((".png", ".ico", ".woff2", ".svg", ".gz")):
            continue  # tests make throwaway users; nothing there ships
        path = ROOT / name
        if not path.is_file():
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            code = not name.endswith(".md") and not line.lstrip().startswith("#")
            if _CREDENTIAL.search(line) or (code and _URL_CREDENTIAL.search(line)):
                hits.append(f"{name}:{n}: {line.strip()[:120]}")
    assert not hits, "\n".join(hits)


@pytest.mark.django_db
def test_demo_admin_password_is_generated_fresh_each_time():
    first = DemoCommand()._fresh_admin_password()
    second = DemoCommand()._fresh_admin_password()
    assert first != second and len(second) >= 16
    admin = User.objects.get(username="admin")
    assert admin.check_password(second) and not admin.check_password(first)


# --- authentication and CSRF --------------------------------------------------------------------------


@pytest.mark.django_db
@override_settings(CRAWLADMIN_API_TOKEN="t0ken-for-this-test-only")
def test_api_and_metrics_need_a_session_or_a_token(client):
    for path in ("/api/summary", "/api/servers", "/metrics"):
        assert client.get(path).status_code == 401, path
        assert client.get(path, HTTP_AUTHORIZATION="Bearer wrong").status_code == 401, path
        assert client.get(path, HTTP_AUTHORIZATION="Bearer t0ken-for-this-test-only").status_code == 200, path
    client.force_login(User.objects.create_superuser("boss", password=secrets.token_urlsafe()))
    for path in ("/api/summary", "/api/servers", "/metrics"):
        assert client.get(path).status_code == 200, path


@pytest.mark.django_db
def test_dashboard_and_admin_need_a_login(client):
    for path in ("/dashboard/", "/dashboard/crawl/", "/dashboard/dead-links/", "/dashboard/heatmap/", "/admin/"):
        response = client.get(path)
        assert response.status_code == 302 and "login" in response["Location"], path


@pytest.mark.django_db
def test_admin_post_without_csrf_token_is_refused():
    client = Client(enforce_csrf_checks=True)
    assert client.post("/admin/login/", {"username": "x", "password": "y"}).status_code == 403
    client.force_login(User.objects.create_superuser("boss", password=secrets.token_urlsafe()))
    response = client.post("/admin/crawladmin/server/add/", {"scheme": "http", "host": "evil.example", "port": 80})
    assert response.status_code == 403
    assert not Server.objects.filter(host="evil.example").exists()


# --- scraped text stays text --------------------------------------------------------------------------


@pytest.fixture
def hostile_rows():
    """Rows whose scraped text (title, description, URL, failure detail) carries script payloads."""
    server = Server.objects.create(scheme="http", host="xss.example", port=80)
    now = timezone.now()
    raw_url = f"http://xss.example/{XSS}{XSS_ATTR}"
    home = Url.objects.create(url=raw_url, url_hash="a" * 24, server=server, state="visited", last_status=200)
    dead = Url.objects.create(
        url=f"http://xss.example/dead{XSS}", url_hash="b" * 24, server=server, state="dead", failure_kind=XSS[:32]
    )
    Page.objects.create(
        url=home,
        body_z=zlib.compress(b""),
        title=XSS + XSS_ATTR,
        description=XSS,
        content_type="text/html",
        checksum="c" * 40,
        fetched_at=now,
        extracted_at=now,
    )
    home.links_out.create(to_url=dead)
    StatusCheck.objects.create(
        url=home, server=server, requested_url=raw_url, checked_at=now, category="error", status_code=500,
        detail=XSS, latency_ms=1.0, failure_kind="http_status", agent="load",
    )  # fmt: skip
    UrlEvent.objects.create(url=dead, from_state="noresponse2", to_state="dead", agent="load", at=now, reason=XSS)
    return server, home, dead


@pytest.mark.django_db
def test_scraped_text_is_escaped_on_every_dashboard_page_and_admin_list(client, hostile_rows):
    server, home, dead = hostile_rows
    client.force_login(User.objects.create_superuser("boss", password=secrets.token_urlsafe()))
    pages = [
        "/dashboard/",
        f"/dashboard/servers/{server.id}/",
        "/dashboard/crawl/",
        "/dashboard/dead-links/",
        f"/dashboard/dead-links/{server.id}/",
        "/dashboard/heatmap/",
        "/admin/crawladmin/server/",
        "/admin/crawladmin/url/",
        "/admin/crawladmin/page/",
        "/admin/crawladmin/statuscheck/",
        "/admin/crawladmin/link/",
        f"/admin/crawladmin/url/{home.id}/change/",
        f"/admin/crawladmin/page/{home.page.id}/change/",
        f"/admin/crawladmin/server/{server.id}/change/",
    ]
    shown_escaped = 0
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        body = response.content.decode()
        for payload in (XSS, XSS_ATTR, "<img src=x"):
            assert payload not in body, f"{path} renders {payload!r} unescaped"
        shown_escaped += "&lt;script&gt;" in body
    assert shown_escaped >= 5  # the payloads are shown (as text), not silently dropped


# --- the private-address guard ------------------------------------------------------------------------


def test_guard_refuses_internal_addresses_before_connecting(settings, monkeypatch):
    assert settings.CRAWL_ALLOW_PRIVATE == ()  # on by default: nothing exempt

    def no_connect(*args, **kwargs):
        raise AssertionError(f"the guard let a connection through: {args[0]}")

    monkeypatch.setattr("crawler.fetch_hooks.create_connection", no_connect)
    check = address_check_for(Server(host="x", trusted=False))
    with Fetcher(FetchPolicy(connect_timeout=1, header_timeout=1, body_timeout=1)) as fetcher:
        for url in (
            "http://10.0.0.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://127.0.0.1:9/",
            "http://[::1]/",
        ):
            result = fetcher.fetch(url, address_check=check)
            assert result.failure is FailureKind.FORBIDDEN_ADDRESS, (url, result.detail)


@pytest.mark.django_db
def test_discovered_link_to_an_internal_address_is_excluded_never_requested(monkeypatch):
    monkeypatch.setattr("crawler.fetch_hooks.create_connection", lambda *a, **k: pytest.fail("connected"))
    ids = urls_insert(urls=[NewUrl("http://10.0.0.1/admin", depth=1), NewUrl("http://169.254.169.254/", depth=1)]).ids
    for url_id in ids.values():
        url = Url.objects.get(id=url_id)
        assert not url.server.trusted  # found on a page, not added by an operator
        load_server_batch(server_id=url.server_id, owner="test")
        url.refresh_from_db()
        assert url.exclusion_reason.startswith("private address"), url.exclusion_reason
        assert url.server.__class__.objects.get(id=url.server_id).excluded_reason.startswith("private address")
    assert not StatusCheck.objects.exists()  # nothing was requested, so nothing was checked
