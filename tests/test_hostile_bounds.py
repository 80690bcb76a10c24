"""Hostile inputs that once held a process past any bound, each now within one: a search whose hits are PDFs
slow to read, a job pattern that expands at compile time or backtracks over every link of a page, 1,100 idle
connections to a process that serves the web and runs the monitor. The crawl's own hostile pages (a tag of
quote-named attributes) are in tests/test_unattended.py."""

from __future__ import annotations

import time
import zlib

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from crawlcore.models import Page, Server, Url
from crawlcore.services.extract import pages_extract, pages_text_fill
from crawler.urlnorm import url_hash
from dashboard.tokens import api_token_create
from tests import parse_hooks
from testweb.pdfs import costly_pdf


def _token(name: str, *groups: str) -> str:
    user = User.objects.create_user(name, password="unused-pw-1")
    for g in groups:
        user.groups.add(Group.objects.get_or_create(name=g)[0])
    return api_token_create(user=user)[1]


def _get(path: str, token: str):
    response = Client().get(path, HTTP_AUTHORIZATION=f"Bearer {token}")
    return response.status_code, response.json()


def _page(server: Server, path: str, body: bytes, content_type: str) -> Page:
    url = f"{server.origin}{path}"
    u = Url.objects.create(url=url, url_hash=url_hash(url), server=server, state="visited")
    return Page.objects.create(url=u, body_z=zlib.compress(body), content_type=content_type,
                               checksum=url_hash(url), fetched_at=timezone.now())  # fmt: skip


@pytest.mark.django_db
def test_a_search_of_200_hits_among_them_ten_pdfs_slow_to_read_answers_within_a_second(monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    server = Server.objects.create(scheme="http", host="docs.test", port=80, group="gov")
    pdfs = [_page(server, f"/report{i}.pdf", costly_pdf(title=f"report {i}"), "application/pdf") for i in range(10)]
    html = [
        _page(server, f"/p{i}", f"<title>page {i}</title><p>the budget of office {i}</p>".encode(), "text/html")
        for i in range(195)
    ]
    with monkeypatch.context() as m:
        # The test's own extraction kept short, where it runs: in the parse's pooled processes (setting
        # crawler.pdf.MAX_SECONDS here left them at the default 10 s a PDF, 100 s for the ten).
        m.setattr("crawlcore.services.extract_parse.READER", parse_hooks.pdf_briefly)
        for i in range(0, len(pdfs) + len(html), 50):
            pages_extract(page_ids=[p.id for p in (pdfs + html)[i : i + 50]])
    token = _token("viewer", "viewer")
    assert _get("/api/v1/search/?q=office&limit=1", token)[0] == 200  # a server that has answered before
    started = time.monotonic()
    code, body = _get("/api/v1/search/?q=budget&limit=200", token)
    took = time.monotonic() - started
    assert code == 200, body
    assert len(body["results"]) == 200
    assert {f"http://docs.test/report{i}.pdf" for i in range(10)} <= {h["url"] for h in body["results"]}
    assert all("<mark>budget</mark>" in h["snippet"] for h in body["results"])
    assert took < 1.0, f"{took:.1f}s"


@pytest.mark.django_db
def test_a_page_extracted_before_its_text_was_kept_gets_it_later_in_small_batches(monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    server = Server.objects.create(scheme="http", host="old.test", port=80, group="")
    pages = [_page(server, f"/{i}", f"<p>old budget {i}</p>".encode(), "text/html") for i in range(3)]
    pages_extract(page_ids=[p.id for p in pages])
    Page.objects.update(text=None)  # as the migration leaves the pages extracted before it
    assert pages_text_fill(limit=2) == 2
    assert pages_text_fill(limit=2) == 1
    assert pages_text_fill(limit=2) == 0
    assert sorted(Page.objects.values_list("text", flat=True)) == [f"old budget {i}" for i in range(3)]


@pytest.mark.django_db
def test_a_pdf_byte_for_byte_one_already_read_is_not_read_again(monkeypatch):
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    from testweb.pdfs import make_pdf

    server = Server.objects.create(scheme="http", host="copies.test", port=80, group="")
    body = make_pdf(["the budget handbook"], links=["http://elsewhere.test/x"], title="Handbook")
    first = _page(server, "/a.pdf", body, "application/pdf")
    Page.objects.filter(id=first.id).update(checksum="same")
    pages_extract(page_ids=[first.id])
    copies = [_page(server, f"/copy{i}.pdf", body, "application/pdf") for i in range(3)]
    Page.objects.filter(id__in=[c.id for c in copies]).update(checksum="same")
    # A PDF read again would fail its parse (its page then has no title and no text, below).
    monkeypatch.setattr("crawlcore.services.extract_parse.READER", parse_hooks.no_pdf)
    pages_extract(page_ids=[c.id for c in copies])
    for copy in Page.objects.filter(id__in=[c.id for c in copies]):
        assert copy.extracted_at is not None and copy.duplicate_of_id == first.id
        assert copy.title == "Handbook" and "budget handbook" in copy.text
        assert list(Url.objects.filter(links_in__from_url_id=copy.url_id).values_list("url", flat=True)) == [
            "http://elsewhere.test/x"
        ]


# --- a job's patterns -------------------------------------------------------------------------------------

BOMB = "(?:x{65535}){65535}"  # twenty characters that compile into more memory than the machine has


@pytest.mark.django_db
def test_a_pattern_bomb_is_refused_at_save_by_the_api_apply_and_the_admin_form():
    from crawladmin.configfile.apply import config_apply
    from crawladmin.configfile.read import ConfigError
    from crawlcore.admin_jobs import JobForm
    from crawlcore.models import Job

    token = _token("operator", "operator")
    started = time.monotonic()
    response = Client().post(
        "/api/v1/jobs/", data={"name": "bomb", "seeds": ["http://a.example/"], "include": [BOMB]},
        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    assert response.status_code == 400, response.content
    assert "too large to compile" in response.json()["fields"]["include"]
    with pytest.raises(ConfigError) as refused:
        config_apply(f"jobs:\n  - name: bomb\n    seeds: [http://a.example/]\n    exclude: ['{BOMB}']\n")
    assert any("too large to compile" in line for line in refused.value.problems)
    form = JobForm(data={"name": "bomb", "seeds": '["http://a.example/"]', "include": f'["{BOMB}"]',
                         "exclude": "[]", "scope": "host", "windows": "[]", "time_zone": "UTC",
                         "enabled": True})  # fmt: skip
    assert not form.is_valid() and "too large to compile" in str(form.errors)
    assert not Job.objects.exists()
    assert time.monotonic() - started < 30


def test_a_pattern_that_does_not_compile_is_named_with_the_reason():
    from crawler.jobrules import JobRuleError, patterns_check

    with pytest.raises(JobRuleError, match=r"'\(unclosed': not a regular expression"):
        patterns_check(["^/docs/", "(unclosed"])
    assert patterns_check(["^/docs/", r"\.pdf$"]) == ["^/docs/", r"\.pdf$"]


@pytest.mark.django_db
def test_a_backtracking_pattern_over_5000_links_costs_one_page_budget_not_one_per_link(monkeypatch):
    from crawlcore.models import Job, JobUrl
    from crawlcore.services.job_admission import jobs_admit
    from crawler import jobrules

    server = Server.objects.create(scheme="http", host="a.example", port=80, group="")
    page = Url.objects.create(url="http://a.example/", url_hash=url_hash("http://a.example/"), server=server)
    job = Job.objects.create(name="slow", seeds=["http://a.example/"], scope="host", state=Job.RUNNING,
                             exclude=["(?:.*,){30}x"], include=[], windows=[], time_zone="UTC")  # fmt: skip
    JobUrl.objects.create(job=job, url=page, depth=0)
    # Each search of this path runs past regex's own 50 ms timeout: per link and pattern, 5,000 of them took minutes.
    links = [(page.id, f"http://a.example/p{i}?" + ",," * 200, 1) for i in range(5000)]
    started = time.monotonic()
    admission = jobs_admit(links=links)
    took = time.monotonic() - started
    assert took < jobrules.PAGE_BUDGET_S + 5, f"{took:.1f}s"
    # The few links decided within the budget are followed (the pattern is not in them); the rest, undecided
    # when the page's budget ran out, are set aside, never followed blindly.
    followed = [url for _, url, _ in links if admission.followed(url)]
    assert len(followed) < 50
    assert {admission.reasons[url] for _, url, _ in links if url not in followed} == {jobrules.EXCLUDED_BY_PATTERN}


# --- 1,100 idle connections -------------------------------------------------------------------------------


def _open_descriptors() -> int:
    import os

    return len(os.listdir("/proc/self/fd"))


@pytest.mark.django_db
def test_1100_idle_connections_to_the_web_leave_content_checks_and_alert_delivery_running(settings):
    """The demo's shape in one process: the dashboard served by Django's threaded server (as runserver serves
    it), held open by 1,100 idle connections, while the same process checks content with a regular expression
    and delivers an alert. Each of those waits on a child process: past descriptor 1023 select() refused."""
    import resource
    import socket
    import threading
    import urllib.request

    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    from alerts.delivery import deliver_all
    from alerts.destinations import Destination
    from alerts.logic import Message
    from monitoring.content import ContentRule, content_failure
    from testweb.alerts import webhook_receiver

    settings.ALLOWED_HOSTS = ["*"]
    idle = 1100
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = _open_descriptors() + 2 * idle + 200  # both ends of each connection live in this process
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.fail(f"the hard limit of open files ({hard}) is below the {want} this test needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args) -> None:
            pass

    class Web(ThreadedWSGIServer):
        request_queue_size = 2048  # the test connects faster than one accept loop: no SYN dropped and retried

    web = Web(("127.0.0.1", 0), QuietHandler, allow_reuse_address=True)
    web.daemon_threads = True
    web.set_app(get_wsgi_application())
    serving = threading.Thread(target=web.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    serving.start()
    held: list[socket.socket] = []
    base = _open_descriptors()
    try:
        for _ in range(idle):
            held.append(socket.create_connection(web.server_address[:2], timeout=5))
        accepted_by = time.monotonic() + 30  # the server accepts them one by one, each with its thread
        while _open_descriptors() < base + 2 * idle and time.monotonic() < accepted_by:
            time.sleep(0.1)
        assert _open_descriptors() >= base + 2 * idle > 1100
        started = time.monotonic()
        rule = ContentRule(must=r"status \d+", must_not=r"error \d+", is_regex=True)
        assert content_failure(b"<p>status 200</p>", rule) is None
        assert content_failure(b"<p>error 500</p>", rule) == "does not contain 'status \\\\d+'"
        with webhook_receiver() as rx:
            message = Message(title="[crawladmin] a.example down", body="a.example: normal -> disconnect",
                              events=(), key="idle-connections")  # fmt: skip
            outcomes = deliver_all([(Destination("apprise", f"{rx.base}/hook"), message)])
            assert [o.ok for o in outcomes] == [True], outcomes
            assert rx.wait_for(1) and rx.received[0].body["title"] == "[crawladmin] a.example down"
        with urllib.request.urlopen(f"http://127.0.0.1:{web.server_address[1]}/admin/login/", timeout=10) as r:
            assert r.status == 200
        assert time.monotonic() - started < 30
    finally:
        for s in held:
            s.close()
        web.shutdown()
        web.server_close()
        serving.join(5)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
