"""Crawl jobs' writes on real PostgreSQL: admission with a page budget and a pattern, politeness onto the
server, pausing one of two jobs that share a URL, editing a running job's patterns, and the progress read."""

from __future__ import annotations

import json
import os

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

SCRIPT = """
import json
from crawlcore.models import Job, JobUrl, Server, Url
from crawlcore.selectors_jobs import job_definition, job_detail, jobs_politeness
from crawlcore.services import job_life
from crawlcore.services.job_admission import jobs_admit
from crawlcore.services.job_definitions import job_save
from crawlcore.services.job_life import job_pause, job_start
from crawlcore.services.urls import NewUrl, urls_insert
from crawler.jobrules import job_spec_check

job_life.servers_dispatch_with_due_work = lambda **kw: 0  # no broker here: what is dispatched is not the point

def make(name, **keys):
    spec, problems = job_spec_check({"name": name, **keys})
    assert not problems, problems
    return job_save(spec=spec)[1]

a = make("a", seeds=["http://a.example/", "http://a.example/shared"], max_depth=1, max_pages=3,
         exclude=["^/cal/"], delay=2.5, concurrency=1)
make("b", seeds=["http://a.example/shared", "http://a.example/b-only"])
job_start(name="a")
job_start(name="b")
home = Url.objects.get(url="http://a.example/")
links = [(home.id, f"http://a.example/p{i}", 1) for i in range(5)] + [(home.id, "http://a.example/cal/x", 1)]
admission = jobs_admit(links=links)
ids = urls_insert(urls=[admission.candidate(NewUrl(u, 1)) for _, u, _ in links]).ids
admission.record(ids)
reasons = dict(Url.objects.filter(url__in=[u for _, u, _ in links]).values_list("url", "exclusion_reason"))
deeper = jobs_admit(links=[(ids["http://a.example/p0"], "http://a.example/p0/q", 1)]).reasons
job_pause(name="b")
held = dict(Url.objects.filter(url__in=["http://a.example/shared", "http://a.example/b-only"])
            .values_list("url", "exclusion_reason"))
edited = {**job_definition(a), "exclude": ["^/cal/", "^/p0"]}
spec, _ = job_spec_check(edited)
outcome, a = job_save(spec=spec)
server = Server.objects.get(host="a.example")
detail = job_detail(job=Job.objects.get(name="a"))
print(json.dumps({
    "a_urls": sorted(JobUrl.objects.filter(job=a).values_list("url__url", flat=True)),
    "reasons": reasons,
    "deeper": deeper,
    "held": held,
    "edit": [outcome, Url.objects.get(url="http://a.example/p0").exclusion_reason],
    "politeness": [server.min_delay, server.max_concurrency, *jobs_politeness(server_id=server.id)],
    "progress": detail["progress"],
    "admitted": Job.objects.get(name="a").admitted,
}))
"""


def test_jobs_on_postgresql(tmp_path):
    with postgres_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "t-key-" * 9,
               "CRAWLADMIN_DATA_DIR": str(tmp_path)}
        manage(env, "migrate", "--verbosity", "0", timeout=300)
        out = json.loads(manage(env, "shell", "-c", SCRIPT, timeout=300).stdout.strip().splitlines()[-1])
    a = "http://a.example"
    # The budget of 3: the two seeds and the first link; the rest set aside with the reason.
    assert out["a_urls"] == [f"{a}/", f"{a}/p0", f"{a}/shared"]
    assert out["admitted"] == 3
    assert out["reasons"] == {f"{a}/p0": "", **{f"{a}/p{i}": "job page limit" for i in range(1, 5)},
                              f"{a}/cal/x": "job pattern"}  # fmt: skip
    assert out["deeper"] == {f"{a}/p0/q": "too deep"}
    # b paused: its own URL waits; the one job a (running) shares stays due.
    assert out["held"] == {f"{a}/shared": "", f"{a}/b-only": "job paused"}
    # a's new pattern sets its queued URL that no longer passes aside.
    assert out["edit"] == ["changed", "job pattern"]
    # The running job's politeness applies while it runs, and is not written onto the server.
    assert out["politeness"] == [None, None, 2.5, 1]
    assert out["progress"]["queued"] == 2 and out["progress"]["done"] == 0
