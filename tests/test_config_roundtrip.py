"""Configuration as code round-trips: what `export_config` writes, `apply` reads back into an empty database
to the same export; a second apply changes nothing; a key left out keeps its value; a dry run says each
change as `field: old -> new`; a job's politeness holds while it runs and is never written onto a server."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from alerts.models import Channel, MaintenanceSchedule, Mute
from crawladmin.configfile.apply import config_apply
from crawladmin.configfile.export import config_export_yaml
from crawladmin.configfile.read import ConfigError
from crawlcore.models import Job, Server
from crawlcore.selectors_jobs import jobs_politeness, server_concurrency_cap, server_delay_floor
from crawlcore.services.job_definitions import job_delete
from crawlcore.services.job_life import job_start
from dashboard.models import StatusPage
from monitoring.models import ServerMonitor

pytestmark = pytest.mark.django_db

EVERY_KIND = """\
servers:
  - url: http://a.example
    group: physics
    trusted: true
monitors:
  - server: http://a.example
    kind: http
    interval_s: 120
    accepted_codes: "200"
  - server: tcp://db.example:5432
    kind: tcp
    name: database
    tcp_tls: true
  - server: dns://example.org
    kind: dns
    dns_record_type: MX
    dns_expected: mail.example.org
  - server: heartbeat://nightly-backup
    kind: heartbeat
    period_s: 3600
    grace_s: 600
channels:
  - name: ops
    url: json://127.0.0.1:9/hook
    rules: [{kinds: "down,up", group: physics}]
  - name: dba
    url: json://127.0.0.1:9/dba
    rules: [{kinds: down, server: "tcp://db.example:5432"}]
maintenance:
  - group: physics
    schedule: "0 2 * * 0"
    duration_minutes: 60
    reason: weekly patching
mutes:
  - server: dns://example.org:53
    until: "2099-01-01T00:00:00+00:00"
status_pages:
  - slug: physics
    group: physics
    title: Physics
jobs:
  - name: docs
    seeds: [http://a.example/]
    delay: 2.5
    concurrency: 1
    schedule: "0 3 * * *"
"""


def _empty_database() -> None:
    for model in (Job, Channel, MaintenanceSchedule, Mute, StatusPage, Server):
        model.objects.all().delete()


def _apply(text: str, *args: str) -> list[str]:
    out = io.StringIO()
    path = "-"
    import sys

    stdin, sys.stdin = sys.stdin, io.StringIO(text)
    try:
        call_command("apply", path, *args, stdout=out, stderr=io.StringIO())
    finally:
        sys.stdin = stdin
    return out.getvalue().splitlines()


def test_every_kind_round_trips_through_an_empty_database_and_a_second_apply_changes_nothing():
    first = _apply(EVERY_KIND)
    assert [line.split()[0] for line in first] == ["created"] * len(first)
    assert {line.split()[1] for line in first} == {"server", "monitor", "channel", "maintenance", "mute",
                                                   "status_page", "job"}  # fmt: skip
    kinds = dict(ServerMonitor.objects.values_list("server__scheme", "kind"))
    assert kinds == {"http": "http", "tcp": "tcp", "dns": "dns", "heartbeat": "heartbeat"}
    exported = config_export_yaml()
    again = _apply(exported)
    assert again and all(line.startswith("unchanged ") for line in again), again
    assert all(line.startswith("unchanged ") for line in _apply(EVERY_KIND))

    _empty_database()
    assert not ServerMonitor.objects.exists() and not Channel.objects.exists()
    created = _apply(exported)
    assert all(line.startswith("created ") for line in created), created
    assert config_export_yaml() == exported
    for section in ("tcp://db.example:5432", "kind: dns", "kind: heartbeat", "0 2 * * 0", "name: dba",
                    "2099-01-01", "slug: physics", "name: docs"):  # fmt: skip
        assert section in exported


def test_prune_removes_what_the_file_no_longer_names():
    _apply(EVERY_KIND)
    smaller = EVERY_KIND.replace("  - name: dba\n    url: json://127.0.0.1:9/dba\n"
                                 '    rules: [{kinds: down, server: "tcp://db.example:5432"}]\n', "")  # fmt: skip
    smaller = smaller.split("maintenance:")[0] + "maintenance: []\nmutes: []\nstatus_pages: []\njobs: []\n"
    lines = _apply(smaller, "--prune")
    removed = sorted(line for line in lines if line.startswith("removed"))
    assert removed == ["removed channel dba", "removed job docs", "removed maintenance group physics 0 2 * * 0",
                       "removed mute dns://example.org:53", "removed status_page physics"]  # fmt: skip
    assert list(Channel.objects.values_list("name", flat=True)) == ["ops"]
    assert Server.objects.filter(host="db.example").exists()  # servers are never pruned


def test_a_server_entry_without_trusted_keeps_its_trust_and_a_dry_run_says_each_change():
    _apply(EVERY_KIND)
    server = Server.objects.get(host="a.example")
    assert server.trusted
    plain = "servers:\n  - url: http://a.example\n    group: chemistry\n"
    dry = _apply(plain, "--dry-run")
    assert dry == ["changed server http://a.example", "  group: 'physics' -> 'chemistry'"]
    server.refresh_from_db()
    assert server.group == "physics" and server.trusted
    assert _apply(plain)[0] == "changed server http://a.example"
    server.refresh_from_db()
    assert server.group == "chemistry" and server.trusted


def test_a_jobs_politeness_holds_while_it_runs_and_is_never_written_onto_the_server():
    _apply(EVERY_KIND)
    job_start(name="docs")
    server = Server.objects.get(host="a.example")
    assert jobs_politeness(server_id=server.id) == (2.5, 1)
    assert server_delay_floor(server) == 2.5 and server_concurrency_cap(server.id, None, 8) == 1
    server.refresh_from_db()
    assert server.min_delay is None and server.max_concurrency is None
    assert all(line.startswith("unchanged ") for line in _apply(EVERY_KIND))
    job_delete(name="docs")
    server.refresh_from_db()
    assert server_delay_floor(server) == 0.0 and server_concurrency_cap(server.id, None, 8) == 8


def test_a_monitor_of_the_wrong_kind_or_with_another_kinds_field_is_refused_with_its_line():
    bad = "monitors:\n  - server: tcp://db.example:5432\n    kind: http\n"
    bad += "  - server: dns://x.example\n    tcp_tls: true\n"
    with pytest.raises(ConfigError) as caught:
        config_apply(bad)
    problems = caught.value.problems
    assert problems[0].startswith("3: monitors[0].kind: a tcp:// server is watched by a tcp monitor")
    assert problems[1].startswith("5: monitors[1].tcp_tls: a field of tcp monitors")


def test_the_admins_job_form_saves_through_job_save_and_its_politeness_applies_at_once():
    from django.contrib.auth.models import User
    from django.test import Client

    _apply(EVERY_KIND)
    job_start(name="docs")
    server = Server.objects.get(host="a.example")
    job = Job.objects.get(name="docs")
    admin = User.objects.create_superuser("root", password="unused-pw-1")
    client = Client()
    client.force_login(admin)
    form = {"name": "docs", "group": "", "seeds": '["http://a.example/"]', "scope": "host", "max_depth": "",
            "max_pages": "", "include": "[]", "exclude": '["^/private/"]', "revisit_after": "", "delay": "7",
            "concurrency": "2", "windows": "[]", "time_zone": "UTC", "schedule": "0 3 * * *", "enabled": "on",
            "runs-TOTAL_FORMS": "0", "runs-INITIAL_FORMS": "0", "runs-MIN_NUM_FORMS": "0",
            "runs-MAX_NUM_FORMS": "1000"}  # fmt: skip
    response = client.post(f"/admin/crawladmin/job/{job.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    job.refresh_from_db()
    assert (job.delay, job.concurrency, job.exclude) == (7.0, 2, ["^/private/"])
    assert jobs_politeness(server_id=server.id) == (7.0, 2)
    server.refresh_from_db()
    assert server.min_delay is None  # the job's, not the server's


@pytest.mark.integration
def test_round_trip_between_two_empty_postgresql_databases(tmp_path):
    """The file's way from the demo to a cluster: apply on one empty database, export, apply to a second
    empty database, export again (the commands themselves, on real PostgreSQL)."""
    import os

    from testweb.cluster import manage, postgres_database

    source = tmp_path / "state.yaml"
    source.write_text(EVERY_KIND, encoding="utf-8")
    env = {**os.environ, "DJANGO_SECRET_KEY": "t-key-" * 9, "CRAWLADMIN_DATA_DIR": str(tmp_path),
           "ALERTS_ALLOW_PRIVATE": "127.0.0.0/8"}  # fmt: skip
    exports = []
    with postgres_database() as first, postgres_database() as second:
        for url, text in ((first, source), (second, tmp_path / "exported.yaml")):
            env["DATABASE_URL"] = url
            manage(env, "migrate", "--verbosity", "0", timeout=300)
            created = manage(env, "apply", str(text)).stdout.splitlines()
            assert created and all(line.startswith("created ") for line in created), created
            exports.append(manage(env, "export_config").stdout)
            (tmp_path / "exported.yaml").write_text(exports[-1], encoding="utf-8")
        again = manage(env, "apply", str(tmp_path / "exported.yaml")).stdout.splitlines()
    assert exports[0] == exports[1]
    assert again and all(line.startswith("unchanged ") for line in again), again
