"""Freshness objectives in the YAML configuration: `apply` prints `created|changed|unchanged|removed freshness
NAME`, the export writes them back, a bad key is one clear line and nothing is written."""

from __future__ import annotations

import io
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from crawladmin.configfile.export import config_export_yaml
from crawlcore.models import FreshnessObjective, Job, Server

pytestmark = pytest.mark.django_db

FILE = """\
servers:
  - url: http://a.example
jobs:
  - name: docs
    seeds: [http://a.example/]
freshness:
  - name: faculty-top
    site: http://a.example
    pages: top:1000
    target: 86400
    budget: 2000
  - name: docs-news
    job: docs
    pages: ^/news/
    target: 3600
    budget: 500
"""


def _apply(text: str, *args: str) -> tuple[list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    stdin, sys.stdin = sys.stdin, io.StringIO(text)
    try:
        call_command("apply", "-", *args, stdout=out, stderr=err)
    finally:
        sys.stdin = stdin
    return out.getvalue().splitlines(), err.getvalue()


def test_apply_creates_then_changes_nothing_and_the_export_round_trips():
    lines, _ = _apply(FILE)
    assert "created freshness faculty-top" in lines and "created freshness docs-news" in lines
    again, _ = _apply(FILE)
    ours = [x for x in again if "freshness" in x]
    assert ours == ["unchanged freshness faculty-top", "unchanged freshness docs-news"]
    exported = config_export_yaml()
    assert "freshness:\n- name: docs-news\n  job: docs\n  pages: ^/news/" in exported
    FreshnessObjective.objects.all().delete()
    Job.objects.all().delete()
    Server.objects.all().delete()
    created, _ = _apply(exported)
    assert "created freshness faculty-top" in created
    assert config_export_yaml() == exported


def test_a_change_says_field_old_new_and_a_key_left_out_keeps_its_value():
    _apply(FILE)
    smaller = FILE.replace("    budget: 2000\n", "").replace("target: 86400", "target: 43200")
    lines, _ = _apply(smaller)
    i = lines.index("changed freshness faculty-top")
    assert lines[i + 1] == "  target: 86400 -> 43200"
    assert FreshnessObjective.objects.get(name="faculty-top").budget == 2000


def test_prune_removes_an_objective_the_file_no_longer_names():
    _apply(FILE)
    lines, _ = _apply(FILE.split("  - name: docs-news")[0], "--prune")
    assert "removed freshness docs-news" in lines
    assert list(FreshnessObjective.objects.values_list("name", flat=True)) == ["faculty-top"]


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        ("    budget: 500\n", "    budget: 500\n    colour: red\n"),
        ("pages: ^/news/", "pages: top:zero"),
        ("job: docs", "job: nope"),
        ("target: 3600", "target: an hour"),
    ],
)
def test_a_bad_entry_is_one_line_with_its_line_number_and_nothing_is_written(replace, message):
    with pytest.raises(CommandError) as info:
        _apply(FILE.replace(replace, message))
    assert "nothing written" in str(info.value)
    assert not FreshnessObjective.objects.exists() and not Server.objects.exists()


def test_the_problem_line_names_the_key():
    err = io.StringIO()
    stdin, sys.stdin = sys.stdin, io.StringIO(FILE.replace("pages: top:1000", "pages: top:0"))
    try:
        with pytest.raises(CommandError):
            call_command("apply", "-", stdout=io.StringIO(), stderr=err)
    finally:
        sys.stdin = stdin
    problems = err.getvalue().splitlines()
    assert problems == ["-:9: freshness[0].pages: 'top:0': top:N needs a whole number N from 1"]
