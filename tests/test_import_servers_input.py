"""`import_servers` with any input: every bad line reported by its number, never a traceback,
the good lines imported; on SQLite in-process and on PostgreSQL (which refuses NUL in text) through
manage.py. The 100,000-line figure is bench/import_servers.py's."""

from __future__ import annotations

import io
import json
import os

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawlcore.models import Server
from monitoring.management.commands.import_servers import NOT_UTF8, _text, read_rows
from monitoring.models import ServerMonitor
from monitoring.services.servers import servers_import
from testweb.cluster import manage, postgres_database

HOSTILE = (
    b"host_or_url,group,crawler_num,interval,delay_threshold,accepted_codes\n"
    + "a.example.org,web,²,,,\n".encode()  # line 2: a digit int() refuses
    + b"b.example.org,we\x00b,1,,,\n"  # line 3: NUL in the group
    + b"c.example.org,caf\xe9,1,,,\n"  # line 4: Latin-1, not UTF-8
    + "d.example.org,\ud559\ubd80,\u0661,,,\n".encode()  # line 5: an Arabic-Indic digit as crawler number
    + b"e.example.org,web\r\n"  # line 6: fine (CRLF)
    + "f.example.org,web,1,\u00bd,,\n".encode()  # line 7: a vulgar fraction as interval
    + "g.example.org,web,1,,,2\u00b900\n".encode()  # line 8: superscript in the accepted codes
    + "\u0000,web\n".encode()  # line 9: NUL as the host
    + "h.example.org,\ud559\ubd80\n".encode()  # line 10: fine, a Korean group
    + b"http://[::1]:8080/health,v6\n"  # line 11: fine, an IPv6 literal
)


def _import(data: bytes) -> tuple[dict, str]:
    out, err = io.StringIO(), io.StringIO()
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"servers-{os.getpid()}.csv")
    with open(path, "wb") as f:
        f.write(data)
    try:
        with pytest.raises(SystemExit) as info:
            call_command("import_servers", path, "--json", stdout=out, stderr=err)
        assert info.value.code == 1
    finally:
        os.unlink(path)
    return json.loads(out.getvalue()), err.getvalue()


def test_hostile_unicode_lines_are_reported_by_number_and_the_rest_imported(db):
    summary, _ = _import(HOSTILE)
    bad = {b["line"]: b["error"] for b in summary["bad"]}
    assert sorted(bad) == [2, 3, 4, 5, 7, 8, 9]
    assert "crawler number '²'" in bad[2]
    assert "control character" in bad[3]
    assert bad[4] == NOT_UTF8
    assert "interval" in bad[7] and "accepted codes" in bad[8]
    assert summary["imported"] == 3
    hosts = set(Server.objects.values_list("host", flat=True))
    assert hosts == {"e.example.org", "h.example.org", "::1"}
    v6 = Server.objects.get(host="::1")
    assert v6.origin == "http://[::1]:8080" and v6.monitor.health_url == "http://[::1]:8080/health"


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(st.text(max_size=25), min_size=1, max_size=7), max_size=8))
def test_any_text_imports_or_is_reported_never_raises(db, table):
    buffer = io.StringIO()
    for cells in table:
        buffer.write(",".join(c.replace('"', "") for c in cells) + "\n")
    rows, bad = read_rows(_text(io.BytesIO(buffer.getvalue().encode("utf-8", "surrogatepass"))))
    servers_import(rows=rows)
    assert ServerMonitor.objects.filter(server__host__in=[r.host for r in rows]).count() == len(rows)
    assert all(isinstance(n, int) and message for n, message in bad)


def test_import_again_changes_only_what_differs_and_keeps_status(db):
    first = "a.example.org,web,1,60,,\nb.example.org,web,2,,,\n"
    rows, _ = read_rows(io.StringIO(first))
    servers_import(rows=rows)
    ServerMonitor.objects.update(status="normal")
    Server.objects.filter(host="a.example.org").update(trusted=False)
    rows, _ = read_rows(io.StringIO("a.example.org,lab,3,120,2.5,200\nb.example.org,web,2,,,\n"))
    outcome = servers_import(rows=rows, trusted=True)
    assert (outcome.created, outcome.updated) == (0, 2)
    a = Server.objects.get(host="a.example.org")
    assert (a.group, a.crawler_num, a.trusted) == ("lab", 3, True)
    assert (a.monitor.interval_s, a.monitor.delay_threshold_s, a.monitor.accepted_codes) == (120.0, 2.5, "200")
    assert set(ServerMonitor.objects.values_list("status", flat=True)) == {"normal"}


def test_a_list_longer_than_one_chunk_imports_whole(db, monkeypatch):
    monkeypatch.setattr("monitoring.services.servers.IMPORT_CHUNK", 7)
    rows, _ = read_rows(io.StringIO("".join(f"s{i}.example.org,g{i % 3},{i % 5}\n" for i in range(30))))
    assert servers_import(rows=rows, trusted=True).created == 30
    assert Server.objects.filter(trusted=True, group="g1").count() == 10
    assert ServerMonitor.objects.count() == 30


def test_a_stray_quote_spoils_its_own_line_only_and_every_unreadable_line_is_reported(db):
    valid = [f"s{i}.example.org,web\n" for i in range(8261)]
    data = (
        "host_or_url,group\n"
        'q.example.org,"web\n'  # line 2: a quote opened and never closed
        + "".join(valid)  # lines 3-8263
        + 'r.example.org,"lab"x\n'  # line 8264: text after a closing quote
        + "t.example.org," + "x" * 70_000 + "\n"  # line 8265: longer than any server line
        + "u.example.org,lab\r\n"  # line 8266: fine
    ).encode()
    summary, err = _import(data)
    bad = {b["line"]: b["error"] for b in summary["bad"]}
    assert bad == {
        2: "unreadable CSV: a quote is opened and not closed on this line",
        8264: "unreadable CSV: text after a closing quote (a quote inside a field must be doubled)",
        8265: "unreadable line: longer than 65536 characters",
    }
    assert summary["imported"] == 8262 and Server.objects.count() == 8262
    assert Server.objects.filter(host="u.example.org", group="lab").exists()


def test_servers_are_trusted_only_with_trusted_and_the_output_says_so(db, tmp_path):
    csv_path = tmp_path / "servers.csv"
    csv_path.write_text("a.example.org,web\n10.1.2.3,lab\n")
    out = io.StringIO()
    call_command("import_servers", str(csv_path), stdout=out)
    assert "not trusted: new servers are fetched with the private-address guard (--trusted" in out.getvalue()
    assert set(Server.objects.values_list("trusted", flat=True)) == {False}
    out = io.StringIO()
    call_command("import_servers", "--trusted", str(csv_path), stdout=out)
    assert "trusted: fetched without the private-address guard" in out.getvalue()
    assert set(Server.objects.values_list("trusted", flat=True)) == {True}
    call_command("import_servers", str(csv_path), "--json", stdout=(out := io.StringIO()))
    assert json.loads(out.getvalue())["trusted"] is False
    assert set(Server.objects.values_list("trusted", flat=True)) == {True}  # kept: trust is never taken silently


@pytest.mark.integration
def test_hostile_lines_on_postgres_are_reported_not_a_traceback(tmp_path):
    (tmp_path / "servers.csv").write_bytes(HOSTILE)
    with postgres_database() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "t-key-" * 9,
            "CRAWLADMIN_DATA_DIR": str(tmp_path),
        }
        manage(env, "migrate", "--verbosity", "0")
        import subprocess
        import sys

        from testweb.cluster import ROOT

        proc = subprocess.run(
            [sys.executable, "manage.py", "import_servers", "--json", str(tmp_path / "servers.csv")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        summary = json.loads(proc.stdout)
        assert [b["line"] for b in summary["bad"]] == [2, 3, 4, 5, 7, 8, 9] and summary["imported"] == 3
