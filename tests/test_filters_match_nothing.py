"""A filter that names no server (a typo, most likely) is refused in one line with a non-zero exit, instead
of an empty file and success; sites are accepted as the dashboard writes them (http://host:port)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from crawlcore.models import Server
from crawlcore.server_filter import servers_named


@pytest.fixture
def servers(db) -> tuple[Server, Server]:
    a = Server.objects.create(scheme="http", host="127.0.0.11", port=8090, group="demo")
    b = Server.objects.create(scheme="https", host="www.example.org", port=443, group="")
    return a, b


@pytest.mark.parametrize(
    "spelling",
    ["127.0.0.11", "127.0.0.11:8090", "http://127.0.0.11:8090", "http://127.0.0.11:8090/", "HTTP://127.0.0.11:8090/x"],
)
def test_a_site_is_named_as_the_dashboard_writes_it_or_by_host(servers, spelling):
    assert list(servers_named(spelling)) == [servers[0]]


@pytest.mark.parametrize("spelling", ["https://127.0.0.11:8090", "127.0.0.11:8091", "127.0.0.12", "http://x:y/"])
def test_a_spelling_of_no_server_names_none(servers, spelling):
    assert not servers_named(spelling).exists()


def test_https_origin_without_port_names_the_default_port(servers):
    assert list(servers_named("https://www.example.org")) == [servers[1]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--site", "http://127.0.0.12:8090"], "no server is named so"),
        (["--site", "nosuch.example"], "no server is named so"),
        (["--group", "nosuch"], "no server is in that group; groups: demo"),
    ],
)
def test_dead_links_refuses_a_filter_that_matches_nothing(servers, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("dead_links", "--no-refresh", *args, stdout=io.StringIO())


def test_dead_links_accepts_the_dashboards_spelling(servers, capsys):
    call_command("dead_links", "--no-refresh", "--site", "http://127.0.0.11:8090")
    assert capsys.readouterr().out.startswith("site,owner,source_url")


def test_export_warc_refuses_a_site_or_group_that_matches_nothing(servers, tmp_path: Path):
    out = tmp_path / "x.warc.gz"
    with pytest.raises(CommandError, match="no server is named so"):
        call_command("export_warc", str(out), "--no-progress", "--site", "nosuch.example", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no server is in that group"):
        call_command("export_warc", str(out), "--no-progress", "--group", "nosuch", stdout=io.StringIO())
    assert not out.exists()
    call_command("export_warc", str(out), "--no-progress", "--site", "http://127.0.0.11:8090", stdout=io.StringIO())
    assert out.exists()


def test_add_channel_refuses_a_group_no_server_is_in(servers):
    with pytest.raises(CommandError, match="no server is in group 'nosuchgroup'"):
        call_command("add_channel", "ops", "json://127.0.0.1:9/", "--group", "nosuchgroup", stdout=io.StringIO())
    call_command("add_channel", "ops", "json://127.0.0.1:9/", "--group", "demo", stdout=io.StringIO())
