from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.config import ConfigError, Env
from crawler.politeness import crawl_delay, retry_after_seconds
from crawler.status import Category, categorize

ROOT = Path(__file__).resolve().parent.parent


def test_defaults_when_unset():
    env = Env({})
    assert env.number("CRAWL_CONNECT_TIMEOUT", 15.0) == 15.0
    assert env.cidrs("CRAWL_ALLOW_PRIVATE") == ()


@pytest.mark.parametrize(
    ("name", "value", "call", "message"),
    [
        ("CRAWL_CONNECT_TIMEOUT", "abc", lambda e: e.number("CRAWL_CONNECT_TIMEOUT", 15.0), "expected a number"),
        ("CRAWL_BODY_TIMEOUT", "-1", lambda e: e.number("CRAWL_BODY_TIMEOUT", 20.0, minimum=0.01), "at least"),
        ("CRAWLER_NUM", "two", lambda e: e.integer("CRAWLER_NUM", None), "whole number"),
        ("CRAWL_ALLOW_PRIVATE", "127.0.0.0/8, nope", lambda e: e.cidrs("CRAWL_ALLOW_PRIVATE"), "'nope'"),
        (
            "CELERY_BROKER_URL",
            "amqp://x",
            lambda e: e.url("CELERY_BROKER_URL", "memory://", ("memory", "redis")),
            "redis://",
        ),
    ],
)
def test_bad_value_names_the_variable(name, value, call, message):
    with pytest.raises(ConfigError) as info:
        call(Env({name: value}))
    assert name in str(info.value) and message in str(info.value)


def test_url_error_never_echoes_a_password():
    with pytest.raises(ConfigError) as info:
        Env({"DATABASE_URL": "mysql://user:s3cret@db/x"}).url("DATABASE_URL", "", ("postgres",))
    assert "s3cret" not in str(info.value)
    assert "mysql" in str(info.value)  # the part that is wrong is named


def _manage(env_extra: dict[str, str], tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_"))}
    env.update(CRAWLADMIN_DATA_DIR=str(tmp_path), **env_extra)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_start_stops_on_bad_setting_with_its_name(tmp_path):
    proc = _manage({"CRAWL_HEADER_TIMEOUT": "ten"}, tmp_path)
    assert proc.returncode != 0
    assert "CRAWL_HEADER_TIMEOUT='ten': expected a number" in proc.stderr


def test_start_with_no_environment_is_embedded(tmp_path):
    proc = _manage({}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "secret_key").exists()


def test_categories():
    assert categorize(200, 0.1, 3.0) == Category.NORMAL
    assert categorize(301, 0.1, 3.0) == Category.NORMAL
    assert categorize(200, 3.5, 3.0) == Category.DELAY
    assert categorize(404, 0.1, 3.0) == Category.ERROR
    assert categorize(503, 9.0, 3.0) == Category.ERROR
    assert categorize(None, 10.0, 3.0) == Category.DISCONNECT


def test_crawl_delay_is_capped_and_defaults():
    assert crawl_delay(None, default=1.0, cap=30.0) == 1.0
    assert crawl_delay(120.0, default=1.0, cap=30.0) == 30.0
    assert crawl_delay(2.5, default=1.0, cap=30.0) == 2.5


def test_retry_after_forms():
    assert retry_after_seconds("120") == 120.0
    assert retry_after_seconds("999999999") == 86400.0
    assert retry_after_seconds("soon") == 60.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


# --- Ranges, control characters, no traceback, private files --------------------------


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CRAWL_HEADER_TIMEOUT", "1e12", "CRAWL_HEADER_TIMEOUT='1e12': must be at most 600"),
        ("CRAWL_CONNECT_TIMEOUT", "inf", "expected a finite number"),
        ("CRAWL_MAX_BODY_BYTES", "99999999999999999999", "must be at most"),
        ("CRAWL_DEFAULT_DELAY", "1e9", "must be at most"),
        ("CRAWL_USER_AGENT", "crawladmin\r\nX-Injected: 1", "CRAWL_USER_AGENT: control character '\\r'"),
        ("CRAWLER_NUM", "²", "CRAWLER_NUM='²': expected a whole number"),
        ("DATABASE_URL", "sqlite:///tmp/a\x1bb", "DATABASE_URL: control character"),
    ],
)
def test_start_refuses_an_out_of_range_or_control_value_naming_it_without_a_traceback(tmp_path, name, value, message):
    proc = _manage({name: value}, tmp_path)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_control_characters_are_refused_in_every_getter():
    env = Env({"X": "a\nb", "Y": "1\x00"})
    with pytest.raises(ConfigError, match="X: control character"):
        env.str("X", "")
    with pytest.raises(ConfigError, match="Y: control character"):
        env.number("Y", 1.0)


def test_secret_key_and_embedded_database_are_owner_only_from_the_start(tmp_path):
    # A permissive umask: the files must not inherit it (no window between creation and a chmod).
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CRAWL", "DATABASE_URL", "CELERY_", "DJANGO_SECRET"))
    }
    env.update(CRAWLADMIN_DATA_DIR=str(tmp_path / "data"))
    code = (
        "import os; os.umask(0); import django; django.setup(); "
        "from django.db import connection; connection.ensure_connection()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "crawladmin.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("secret_key", "crawladmin.sqlite3"):
        assert (tmp_path / "data" / name).stat().st_mode & 0o777 == 0o600, name
    assert (tmp_path / "data").stat().st_mode & 0o777 == 0o700
    assert not [p for p in (tmp_path / "data").iterdir() if p.name.startswith(".")]  # no temporary file left


def test_the_secret_key_file_is_written_whole_once(tmp_path):
    from crawladmin.settings import _private_file_create

    _private_file_create(tmp_path / "k", b"first")
    _private_file_create(tmp_path / "k", b"second")  # a second process starting at once: keeps the first
    assert (tmp_path / "k").read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["k"]
