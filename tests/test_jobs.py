"""Crawl jobs, step by step: the pure rules, admission of links by a job's limits, holding a job that does not
run, the config file's checks (with lines), and the commands' one-line errors."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from crawladmin.configfile.apply import config_apply
from crawladmin.configfile.export import config_export_yaml
from crawladmin.configfile.read import ConfigError
from crawlcore.models import Job, JobUrl, Url
from crawlcore.services.job_admission import jobs_admit
from crawlcore.services.job_budget import budget_take
from crawlcore.services.job_definitions import job_save
from crawlcore.services.job_life import job_pause, job_resume, job_start
from crawler import jobrules
from crawler.jobrules import PathRules, job_spec_check
from crawler.windows import in_day_windows

# -- pure ----------------------------------------------------------------------------------------------------


def test_windows_across_midnight():
    night = ["22:00-06:00"]
    assert in_day_windows(night, datetime(2026, 1, 1, 23, 30, tzinfo=UTC), "UTC")
    assert in_day_windows(night, datetime(2026, 1, 1, 5, 59, tzinfo=UTC), "UTC")
    assert not in_day_windows(night, datetime(2026, 1, 1, 12, 0, tzinfo=UTC), "UTC")
    assert in_day_windows([], datetime(2026, 1, 1, 12, 0, tzinfo=UTC), "UTC")


def test_patterns_on_the_path_with_a_time_bound():
    rules = PathRules(include=("^/docs/",), exclude=("^/docs/calendar/",))
    assert rules.reason("http://a.example/docs/x") == ""
    assert rules.reason("http://a.example/docs/calendar/2026") == jobrules.EXCLUDED_BY_PATTERN
    assert rules.reason("http://a.example/news/") == jobrules.EXCLUDED_BY_PATTERN
    slow = PathRules(exclude=("(a|aa)+$",))
    # A catastrophic pattern runs out of time and lets nothing through, instead of stalling the worker.
    assert slow.reason("http://a.example/" + "a" * 40 + "!", timeout_s=0.01) == jobrules.EXCLUDED_BY_PATTERN


def test_job_keys_checked_with_every_problem_named():
    _, problems = job_spec_check({"name": " bad name", "seeds": [], "scope": "x", "max_depth": -1,
                                  "windows": ["25:00-01:00"], "schedule": "every day", "time_zone": "Mars/Base",
                                  "exclude": ["("], "colour": "red"})  # fmt: skip
    assert set(problems) == {"name", "seeds", "scope", "max_depth", "windows", "schedule", "time_zone", "exclude",
                             "colour"}  # fmt: skip
    spec, problems = job_spec_check({"name": "ok", "seeds": ["HTTP://A.example:80/x"], "revisit_after": "2h"})
    assert not problems and spec["seeds"] == ["http://a.example/x"] and spec["revisit_after"] == 7200


# -- the crawl core ----------------------------------------------------------------------------------------


def _job(name: str, **keys) -> Job:
    spec, problems = job_spec_check({"name": name, **keys})
    assert not problems, problems
    return job_save(spec=spec)[1]


@pytest.mark.django_db
def test_a_job_takes_in_links_by_its_depth_scope_and_patterns():
    _job("docs", seeds=["http://a.example/"], max_depth=1, exclude=["^/calendar/"])
    job_start(name="docs")
    seed = Url.objects.get(url="http://a.example/")
    admission = jobs_admit(links=[(seed.id, "http://a.example/p", 1), (seed.id, "http://a.example/calendar/1", 1),
                                  (seed.id, "http://b.example/", 1)])  # fmt: skip
    assert admission.followed("http://a.example/p")
    assert admission.reasons == {"http://a.example/calendar/1": "job pattern", "http://b.example/": "out of scope"}
    from crawlcore.services.urls import NewUrl, urls_insert

    ids = urls_insert(urls=[NewUrl("http://a.example/p", 1)]).ids
    admission.record(ids)
    page = Url.objects.get(url="http://a.example/p")
    assert JobUrl.objects.get(url=page).depth == 1
    # One step further is deeper than the job's limit.
    deeper = jobs_admit(links=[(page.id, "http://a.example/q", 1)])
    assert deeper.reasons == {"http://a.example/q": "too deep"}


def _stored_page(url: Url, body: bytes):
    import zlib

    from django.utils import timezone

    from crawlcore.models import Page

    Url.objects.filter(id=url.id).update(state="visited")
    return Page.objects.create(url=url, body_z=zlib.compress(body), content_type="text/html", checksum=url.url[-8:],
                               fetched_at=timezone.now(), extract_dispatched_at=timezone.now())  # fmt: skip


@pytest.mark.django_db
def test_the_extract_agent_follows_a_job_pages_links_by_the_jobs_rules_and_reads_no_more_for_other_pages(
    monkeypatch,
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from crawlcore.services.extract import pages_extract
    from crawlcore.services.urls import NewUrl, urls_insert

    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    _job("docs", seeds=["http://a.example/"], max_depth=1, exclude=["^/calendar/"])
    job_start(name="docs")
    seed = _stored_page(Url.objects.get(url="http://a.example/"),
                        b"<a href='/p'>p</a><a href='/calendar/1'>c</a><a href='http://b.example/'>b</a>")  # fmt: skip
    (other_id,) = urls_insert(urls=[NewUrl("http://c.example/", 0)]).ids.values()
    other = _stored_page(Url.objects.get(id=other_id), b"<a href='/q'>q</a>")
    pages_extract(page_ids=[seed.id])
    assert JobUrl.objects.get(url__url="http://a.example/p").depth == 1
    assert Url.objects.get(url="http://a.example/p").exclusion_reason == ""
    assert Url.objects.get(url="http://a.example/calendar/1").exclusion_reason == jobrules.EXCLUDED_BY_PATTERN
    assert Url.objects.get(url="http://b.example/").exclusion_reason == "out of scope"
    # A page no job reached: its links follow the global rules, and the job table is not read apart.
    with CaptureQueriesContext(connection) as queries:
        pages_extract(page_ids=[other.id])
    assert Url.objects.get(url="http://c.example/q").exclusion_reason == ""
    assert not JobUrl.objects.filter(url__url="http://c.example/q").exists()
    assert not [q for q in queries.captured_queries if q["sql"].lstrip().startswith('SELECT "crawladmin_joburl"')]


@pytest.mark.django_db
def test_a_url_reached_by_two_jobs_is_one_row_counted_for_both():
    _job("one", seeds=["http://a.example/"])
    _job("two", seeds=["http://a.example/"])
    job_start(name="one")
    job_start(name="two")
    assert Url.objects.filter(url="http://a.example/").count() == 1
    assert JobUrl.objects.filter(url__url="http://a.example/").count() == 2


@pytest.mark.django_db
def test_the_page_budget_is_never_exceeded():
    job = _job("capped", seeds=["http://a.example/"], max_pages=5)
    assert budget_take(job_id=job.id, want=3, max_pages=5) == 3
    assert budget_take(job_id=job.id, want=3, max_pages=5) == 2
    assert budget_take(job_id=job.id, want=1, max_pages=5) == 0


@pytest.mark.django_db
def test_pausing_sets_queued_urls_aside_unless_another_running_job_holds_them():
    _job("one", seeds=["http://a.example/", "http://a.example/only-one"])
    _job("two", seeds=["http://a.example/"])
    job_start(name="one")
    job_start(name="two")
    job_pause(name="one")
    shared, own = Url.objects.get(url="http://a.example/"), Url.objects.get(url="http://a.example/only-one")
    assert shared.exclusion_reason == "" and shared.next_check_at is not None
    assert own.exclusion_reason == "job paused" and own.next_check_at is None
    job_resume(name="one")
    own.refresh_from_db()
    assert own.exclusion_reason == "" and own.next_check_at is not None


@pytest.mark.django_db
def test_a_job_outside_its_window_holds_its_urls():
    now = datetime.now(UTC)
    closed = f"{(now.hour + 2) % 24:02d}:00-{(now.hour + 3) % 24:02d}:00"
    _job("night", seeds=["http://a.example/"], windows=[closed])
    job_start(name="night")
    assert Url.objects.get(url="http://a.example/").exclusion_reason == "job outside its window"


# -- the config file ----------------------------------------------------------------------------------------

GOOD = """\
jobs:
  - name: docs
    seeds: [http://a.example/]
    max_depth: 2
"""


@pytest.mark.django_db
def test_apply_is_idempotent_and_a_dry_run_writes_nothing():
    assert config_apply(GOOD) == [("created", "job", "docs")]
    assert config_apply(GOOD) == [("unchanged", "job", "docs")]
    assert config_apply(GOOD.replace("max_depth: 2", "max_depth: 3"), dry_run=True) == [("changed", "job", "docs")]
    assert Job.objects.get().max_depth == 2


@pytest.mark.django_db
def test_apply_reports_every_problem_with_its_line_and_writes_nothing():
    bad = GOOD + "  - name: news\n    seeds: [http://b.example/]\n    max_pages: lots\n    scope: nowhere\n"
    with pytest.raises(ConfigError) as caught:
        config_apply(bad)
    assert caught.value.problems == [
        "8: jobs[1].scope: must be host, domain or any",
        "7: jobs[1].max_pages: must be a whole number from 1 to 1000000000",
    ]
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_prune_removes_jobs_the_file_no_longer_names_and_export_round_trips():
    config_apply(GOOD + "  - name: old\n    seeds: [http://b.example/]\n")
    assert config_apply(GOOD, prune=True) == [("unchanged", "job", "docs"), ("removed", "job", "old")]
    exported = config_export_yaml()
    assert config_apply(exported) == [("unchanged", "job", "docs")]


@pytest.mark.django_db
def test_commands_answer_a_mistake_with_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("jobs: [\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 problem"):
        call_command("apply", str(path), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().count("\n") == 1 and "not valid YAML" in err.getvalue()
    with pytest.raises(CommandError, match="no job named 'nothing'"):
        call_command("job", "show", "nothing", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no user named"):
        call_command("api_token", "nobody", stdout=io.StringIO())


@pytest.mark.django_db
def test_the_tick_starts_a_scheduled_job_when_due_and_closes_a_run_with_nothing_left():
    from datetime import timedelta

    from django.utils import timezone

    from crawlcore.models import JobRun
    from crawlcore.services.job_tick import jobs_tick

    job = _job("nightly", seeds=["http://a.example/"], schedule="* * * * *")
    Job.objects.filter(id=job.id).update(next_run_at=timezone.now() - timedelta(seconds=1))
    before = timezone.now()
    assert jobs_tick()["started"] == 1
    job.refresh_from_db()
    # The next minute after the tick's own time: not after the time of this check, which may be past it when the
    # tick ran in a minute's last moment (seen in a CI run: next 12:09:00, checked at 12:09:00.03).
    assert job.state == "running" and job.next_run_at > before
    assert JobRun.objects.get().trigger == "schedule"
    Url.objects.filter(url="http://a.example/").update(state="visited", last_checked_at=timezone.now())
    assert jobs_tick()["finished"] == 1
    job.refresh_from_db()
    run = JobRun.objects.get()
    assert job.state == "idle" and run.stop_reason == "done" and run.pages == 1 and run.ended_at is not None


@pytest.mark.django_db
def test_crawl_job_in_the_cluster_mode_starts_it_and_returns(settings):
    import json

    settings.CELERY_EMBEDDED = False
    _job("docs", seeds=["http://a.example/"])
    out = io.StringIO()
    call_command("crawl", "--job", "docs", "--json", stdout=out)
    assert json.loads(out.getvalue())["state"] == "running"
    assert Job.objects.get(name="docs").state == "running"
    with pytest.raises(CommandError, match="give no seed URL"):
        call_command("crawl", "--job", "docs", "http://b.example/", stdout=io.StringIO())


FULL = """\
servers:
  - url: http://a.example
    group: physics
    min_delay: 3
monitors:
  - server: http://a.example
    interval_s: 120
channels:
  - name: ops
    url: json://127.0.0.1:9/hook
    rules: [{kinds: "down,up", group: physics}]
"""


@pytest.mark.django_db
def test_apply_writes_servers_monitors_and_channels_and_names_their_problems():
    assert config_apply(FULL) == [("created", "server", "http://a.example"), ("created", "monitor", "http://a.example"),
                                  ("created", "channel", "ops")]  # fmt: skip
    again = [("unchanged", "server", "http://a.example"), ("unchanged", "monitor", "http://a.example"),
             ("unchanged", "channel", "ops")]  # fmt: skip
    assert config_apply(FULL) == again
    bad = FULL.replace("server: http://a.example", "server: http://z.example")
    with pytest.raises(ConfigError) as caught:
        config_apply(bad + "extra: 1\n")
    assert caught.value.problems == [
        "12: extra: unknown section (known: servers, monitors, channels, maintenance, mutes, status_pages, jobs,"
        " freshness)",
        "6: monitors[0].server: required: the URL of a server that exists or that this file names (tcp://host:port,"
        " dns://name and heartbeat://slug are made when missing)",
    ]
    with pytest.raises(ConfigError) as caught:
        config_apply(FULL.replace("interval_s: 120", "interval_s: fast"))
    assert {p.split(":")[0] for p in caught.value.problems} == {"7"}


# -- what one job or one operator may not break for others ------------------------------------------------


def test_an_impossible_schedule_is_refused_when_the_job_is_written():
    _, problems = job_spec_check({"name": "never", "seeds": ["http://a.example/"], "schedule": "0 0 31 2 *"})
    assert "schedule" in problems and "never" in problems["schedule"]
    assert not job_spec_check({"name": "leap", "seeds": ["http://a.example/"], "schedule": "0 0 29 2 *"})[1]


def test_a_job_name_with_a_control_character_or_a_trailing_newline_is_refused():
    for name in ("a\x00b", "docs\n"):
        assert "name" in job_spec_check({"name": name, "seeds": ["http://a.example/"]})[1]


def test_a_revisit_interval_past_any_column_is_refused():
    _, problems = job_spec_check({"name": "r", "seeds": ["http://a.example/"], "revisit_after": 10**12})
    assert "revisit_after" in problems
    _, problems = job_spec_check({"name": "r", "seeds": ["http://a.example/"], "revisit_after": "99999999999w"})
    assert "revisit_after" in problems


@pytest.mark.django_db
def test_one_job_whose_schedule_cannot_be_computed_does_not_stop_the_others():
    from datetime import timedelta

    from django.utils import timezone

    from crawlcore.services.job_tick import jobs_tick

    bad = _job("bad", seeds=["http://a.example/"])
    good = _job("good", seeds=["http://b.example/"], schedule="* * * * *")
    # Written past the checks (an older version, a shell): the tick must still move on.
    Job.objects.filter(id=bad.id).update(schedule="0 0 31 2 *")
    Job.objects.filter(id=good.id).update(next_run_at=timezone.now() - timedelta(seconds=1))
    assert jobs_tick()["started"] == 1
    assert Job.objects.get(id=good.id).state == "running"
    bad.refresh_from_db()
    assert bad.state == "idle" and bad.next_run_at is not None and bad.next_run_at > timezone.now()


@pytest.mark.django_db
def test_pausing_or_deleting_a_job_leaves_the_default_crawls_queued_urls_due():
    """The default crawl reached http://a.example/queued before the job did: the job's pause or removal must
    not set it aside for good (no job takes it back)."""
    from crawlcore.services.job_definitions import job_delete
    from crawlcore.services.urls import NewUrl, urls_insert

    urls_insert(urls=[NewUrl("http://a.example/queued", 0)])
    before = Url.objects.get(url="http://a.example/queued")
    assert before.exclusion_reason == "" and before.next_check_at is not None
    _job("j", seeds=["http://a.example/queued", "http://a.example/own"])
    job_start(name="j")
    job_pause(name="j")
    assert Url.objects.get(url="http://a.example/own").exclusion_reason == "job paused"
    assert Url.objects.get(url="http://a.example/queued").exclusion_reason == ""
    job_resume(name="j")
    job_delete(name="j")
    queued = Url.objects.get(url="http://a.example/queued")
    assert queued.exclusion_reason == "" and queued.next_check_at is not None
    # The job's own URL goes with the job: set aside (it was never the default crawl's).
    assert Url.objects.get(url="http://a.example/own").exclusion_reason == "job stopped"


@pytest.mark.django_db
def test_a_jobs_politeness_stays_in_its_group_and_goes_with_the_job():
    from crawlcore.models import Server
    from crawlcore.selectors_jobs import server_concurrency_cap, server_delay_floor
    from crawlcore.services.job_definitions import job_delete
    from crawlcore.services.urls import NewUrl, urls_insert

    def politeness(server):
        return server_delay_floor(server), server_concurrency_cap(server.id, server.max_concurrency, 8)

    mine = Server.objects.create(scheme="http", host="a.example", port=80, group="physics", min_delay=1.0)
    theirs = Server.objects.create(scheme="http", host="b.example", port=80, group="chemistry")
    job = _job("slow", group="physics", seeds=["http://a.example/"], delay=3600, concurrency=1, scope="any")
    job_start(name="slow")
    # A link of the job's page to another group's server, taken in (scope any).
    home = Url.objects.get(url="http://a.example/")
    admission = jobs_admit(links=[(home.id, "http://b.example/x", 1)])
    admission.record(urls_insert(urls=[admission.candidate(NewUrl("http://b.example/x", 1))]).ids)
    assert JobUrl.objects.filter(job=job, url__url="http://b.example/x").exists()
    theirs.refresh_from_db()
    assert politeness(theirs) == (0.0, 8)
    mine.refresh_from_db()
    assert politeness(mine) == (3600.0, 1)
    job_delete(name="slow")
    mine.refresh_from_db()
    assert politeness(mine) == (1.0, 8)  # the server's own floor, not the job's
    assert (mine.min_delay, mine.max_concurrency) == (1.0, None)
