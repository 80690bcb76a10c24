"""Crawl jobs' controls do what they say, step by step: a job walks on from pages another crawl stored, a
pause sets aside the URLs a load batch holds and keeps the run open for resume, and the ETA rests on this
run's own pages (and says when it has too little to go on)."""

from __future__ import annotations

import zlib
from datetime import timedelta

import pytest
from django.utils import timezone

from crawlcore.models import Job, JobRun, JobUrl, Page, Url
from crawlcore.selectors_jobs import job_definition, job_progress
from crawlcore.services.job_definitions import job_save
from crawlcore.services.job_life import job_finish, job_pause, job_resume, job_start, job_stop
from crawlcore.services.urls import NewUrl, urls_claim, urls_insert
from crawler import jobrules
from crawler.jobrules import job_spec_check


@pytest.fixture(autouse=True)
def no_dispatch(monkeypatch):
    # No broker in these tests: what is dispatched is not the point.
    monkeypatch.setattr("crawlcore.services.job_life.servers_dispatch_with_due_work", lambda **kw: 0)
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0, raising=False)


def _job(name: str, **keys) -> Job:
    spec, problems = job_spec_check({"name": name, **keys})
    assert not problems, problems
    return job_save(spec=spec)[1]


def _stored(url: str, body: bytes) -> Page:
    row = Url.objects.get(url=url)
    Url.objects.filter(id=row.id).update(state="visited", last_checked_at=timezone.now() - timedelta(hours=1))
    return Page.objects.create(url=row, body_z=zlib.compress(body), content_type="text/html", checksum=url[-8:],
                               fetched_at=timezone.now(), extract_dispatched_at=timezone.now())  # fmt: skip


@pytest.mark.django_db
def test_a_first_job_walks_on_from_pages_another_crawl_already_extracted():
    from crawlcore.services.extract import pages_extract

    # The default crawl fetched and extracted the home page and one page below it; one link is left to fetch.
    urls_insert(urls=[NewUrl("http://a.example/", 0)])
    pages_extract(page_ids=[_stored("http://a.example/", b"<a href='/p'>p</a><a href='/calendar/x'>c</a>").id])
    pages_extract(page_ids=[_stored("http://a.example/p", b"<a href='/q'>q</a><a href='/'>home</a>").id])
    assert Url.objects.get(url="http://a.example/q").state == "init"
    _job("docs", seeds=["http://a.example/"], exclude=["^/calendar/"])
    job_start(name="docs")
    reached = set(JobUrl.objects.filter(job__name="docs").values_list("url__url", flat=True))
    # Walked from the stored pages: the home page, /p (stored) and /q (to fetch), not the excluded calendar.
    assert reached == {"http://a.example/", "http://a.example/p", "http://a.example/q"}
    progress = job_progress(job=Job.objects.get(name="docs"))
    assert progress["done"] == 2 and progress["queued"] == 1


@pytest.mark.django_db
def test_pause_sets_aside_the_urls_a_load_batch_holds_and_keeps_the_run_open_for_resume():
    job = _job("docs", seeds=["http://a.example/", "http://a.example/b"])
    run = job_start(name="docs")
    server_id = Url.objects.get(url="http://a.example/").server_id
    claimed = urls_claim(server_id=server_id, owner="worker-1", limit=10)
    assert len(claimed) == 2
    job_pause(name="docs")
    # Leased to the batch and set aside all the same: the batch hands them back before their request.
    rows = Url.objects.filter(id__in=[u.id for u in claimed])
    assert set(rows.values_list("exclusion_reason", flat=True)) == {jobrules.JOB_PAUSED}
    # The end of an embedded crawl does not finish a paused job: its run waits for resume.
    assert not job_finish(job_id=job.id, reason="done")
    assert Job.objects.get(id=job.id).state == Job.PAUSED
    assert JobRun.objects.get(id=run.id).paused_at is not None
    Url.objects.filter(id__in=[u.id for u in claimed]).update(lease_owner="", lease_expires_at=None)
    job_resume(name="docs")
    assert Job.objects.get(id=job.id).state == Job.RUNNING
    assert JobRun.objects.filter(job=job).count() == 1
    back = JobRun.objects.get(id=run.id)
    assert back.paused_at is None and back.resumed_at is not None and back.ended_at is None
    assert set(rows.values_list("exclusion_reason", flat=True)) == {""}
    job_stop(name="docs")
    assert JobRun.objects.get(id=run.id).stop_reason == "stopped"


@pytest.mark.django_db
def test_a_paused_jobs_urls_handed_back_by_a_batch_leave_no_request_intent_behind():
    """The batch committed its next requests' intents ahead of sending them; those of the URLs it hands back
    on a pause are discarded then, not at the visit's close: a worker killed in between would leave them as
    checks of requests that never went out."""
    from crawlcore.models import StatusCheck
    from crawlcore.services.load import LoadBatch
    from crawlcore.services.visit import ServerVisit
    from crawler.lifecycle import Agent

    _job("docs", seeds=["http://a.example/", "http://a.example/b", "http://a.example/c"])
    job_start(name="docs")
    server = Url.objects.get(url="http://a.example/").server
    visit = ServerVisit(server, "worker-1", Agent.LOAD)
    batch = LoadBatch(visit)
    batch.urls = batch.taken(urls_claim(server_id=server.id, owner="worker-1", limit=10))
    batch.pending = dict.fromkeys(u.id for u in batch.urls)
    visit.reserve([u.url for u in batch.urls])
    assert StatusCheck.objects.filter(category=StatusCheck.PENDING).count() == 3
    job_pause(name="docs")
    batch.set_aside_at -= 60  # the batch's next look
    assert batch.set_aside(batch.urls[0])
    assert StatusCheck.objects.filter(category=StatusCheck.PENDING).count() == 0
    assert not any(visit.reserved(u.url) for u in batch.urls)
    visit.close()


def _done(urls: list[str], at):
    for i, url in enumerate(urls):
        Url.objects.filter(url=url).update(state="visited", last_checked_at=at + timedelta(seconds=i))


@pytest.mark.django_db
def test_the_eta_rests_on_this_runs_pages_only_and_says_when_it_has_too_little():
    now = timezone.now()
    seeds = [f"http://a.example/{i}" for i in range(30)]
    job = _job("docs", seeds=seeds)
    # A previous run fetched ten pages a minute ago, fast.
    JobRun.objects.create(job=job, started_at=now - timedelta(minutes=3), ended_at=now - timedelta(seconds=50))
    job_start(name="docs")
    _done(seeds[:10], now - timedelta(seconds=60))
    JobRun.objects.filter(job=job, ended_at__isnull=True).update(started_at=now - timedelta(seconds=20))
    job.refresh_from_db()
    p = job_progress(job=job, now=now)
    assert p["eta_seconds"] is None
    assert p["eta_basis"].startswith("too little to go on: 0 pages")
    # This run: ten pages at one a second; twenty left.
    _done(seeds[10:20], now - timedelta(seconds=12))
    p = job_progress(job=job, now=now)
    assert p["queued"] == 10 and 9 <= p["eta_seconds"] <= 12, p
    assert "10 pages of this run" in p["eta_basis"]
    # A minute of waiting later (a politeness turn, no page done), the ETA has not grown.
    later = job_progress(job=job, now=now + timedelta(seconds=60))
    assert later["eta_seconds"] == p["eta_seconds"]
    job_pause(name="docs")
    job.refresh_from_db()
    paused = job_progress(job=job, now=now)
    assert paused["eta_seconds"] is None and paused["eta_basis"] == "paused"


@pytest.mark.django_db
def test_a_running_job_with_nothing_queued_but_pages_unread_gives_no_eta_of_zero():
    # The cluster's start: the seed is fetched, its links not read yet. "0 s, nothing queued" would be false.
    job = _job("docs", seeds=["http://a.example/"])
    job_start(name="docs")
    _stored("http://a.example/", b"<a href='/p'>p</a>").__class__.objects.update(extracted_at=None)
    job.refresh_from_db()
    p = job_progress(job=job)
    assert p["queued"] == 0 and p["eta_seconds"] is None, p
    assert p["eta_basis"] == "nothing queued; 1 fetched page still to be read for links"
    from crawlcore.services.extract import pages_extract

    pages_extract(page_ids=list(Page.objects.values_list("id", flat=True)))
    p = job_progress(job=job)
    assert p["queued"] == 1 and p["eta_basis"].startswith("too little to go on"), p


@pytest.mark.django_db
def test_editing_patterns_of_a_running_job_counts_what_it_set_aside_on_the_run():
    job = _job("docs", seeds=["http://a.example/", "http://a.example/cal/1", "http://a.example/cal/2"])
    run = job_start(name="docs")
    spec, _ = job_spec_check({**job_definition(job), "exclude": ["^/cal/"]})
    job_save(spec=spec)
    assert JobRun.objects.get(id=run.id).set_aside == 2
    assert job_progress(job=Job.objects.get(id=job.id))["set_aside"] == 2


@pytest.mark.django_db
def test_an_exclude_added_while_paused_keeps_its_urls_aside_after_resume():
    job = _job("docs", seeds=["http://a.example/", "http://a.example/cal/1"])
    job_start(name="docs")
    job_pause(name="docs")
    spec, _ = job_spec_check({**job_definition(job), "exclude": ["^/cal/"]})
    job_save(spec=spec)
    job_resume(name="docs")
    assert Url.objects.get(url="http://a.example/cal/1").exclusion_reason == jobrules.EXCLUDED_BY_PATTERN
    assert Url.objects.get(url="http://a.example/").exclusion_reason == ""
    assert job_progress(job=Job.objects.get(id=job.id))["set_aside"] == 1
