"""Content regular expressions are bounded for real: a pattern whose compiled form would not fit in memory is
refused when the monitor is saved, with the reason on the form, and a search that the `regex` module's own
timeout does not interrupt ends near its bound (a child process with a hard stop)."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import pytest
from django.core.exceptions import ValidationError

from monitoring.content import CONTENT_TIMEOUT_S, ContentRule, content_failure

from .crawlcheck import ROOT, clean_env

HUGE = r"(?:x{65535}){65535}"

# What the admin's form runs on save (the model's clean), in a process of its own: no database needed.
SAVE = """
from django.core.exceptions import ValidationError
from monitoring.models import ServerMonitor

try:
    ServerMonitor(content_must={pattern!r}, content_regex=True).clean()
except ValidationError as exc:
    print("REFUSED", exc.message_dict["content_must"][0])
else:
    print("ACCEPTED")
"""


def _address_space_cap() -> None:
    # The process under test may not take the machine with it if the pattern is compiled unbounded.
    cap = 4 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def test_a_search_regex_cannot_interrupt_ends_near_its_bound():
    body = b"a" * (10 * 1024 * 1024)
    started = time.monotonic()
    why = content_failure(body, ContentRule(must=r"\p{L}*\d$", is_regex=True))
    took = time.monotonic() - started
    assert why == f"content check took longer than {CONTENT_TIMEOUT_S:g}s"
    # The bound is 0.5 s (plus starting the child); the unbounded search took 9-17 s.
    assert took < 5.0, took


def test_searches_in_time_still_pass_and_fail_on_what_they_find():
    rule = ContentRule(must=r"status \d+", must_not=r"error \d+", is_regex=True)
    assert content_failure(b"status 200 ok", rule) is None
    assert content_failure(b"status 200, error 42", rule) == r"contains 'error \\d+'"
    assert content_failure(b"nothing", rule) == r"does not contain 'status \\d+'"


def test_a_pattern_too_large_to_compile_is_refused_at_save_with_a_clear_message(tmp_path):
    env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path))
    run = dict(cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    proc = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SAVE.format(pattern=HUGE)], preexec_fn=_address_space_cap, **run
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "REFUSED must contain: the regular expression is too large to compile" in proc.stdout


def test_a_bad_or_overlong_pattern_is_refused_with_its_reason(db):
    from crawlcore.models import Server
    from monitoring.models import ServerMonitor

    server = Server.objects.create(scheme="http", host="127.0.0.9", port=80, trusted=True)
    with pytest.raises(ValidationError, match=r"not a regular expression \(missing \)"):
        ServerMonitor(server=server, content_must_not="(", content_regex=True).full_clean()
    with pytest.raises(ValidationError, match="at most 2000 characters"):
        ServerMonitor(server=server, content_must="a" * 2001, content_regex=True).full_clean()
    ServerMonitor(server=server, content_must=r"status \d+", content_regex=True).full_clean()
