"""Which pages the extract agent sends to the render agent (crawlcore.services.render): the job's `render`
key over CRAWL_RENDER, the detector in auto mode, and the host's decision from its samples."""

from __future__ import annotations

import zlib

import pytest
from django.utils import timezone

from crawlcore.models import Page, Server, Url
from crawlcore.services.extract import pages_extract
from crawlcore.services.job_definitions import job_save
from crawlcore.services.job_life import job_start
from crawlcore.services.render import server_render_sample
from crawler.jobrules import job_spec_check

SHELL = b'<html><body><div id="root"></div><script src="/app.js"></script></body></html>'
PLAIN = b"<html><body><p>" + b"Plain words served as HTML. " * 20 + b'</p><a href="/x">x</a></body></html>'


def _page(url: str, body: bytes) -> Page:
    from crawlcore.services.urls import NewUrl, urls_insert

    (url_id,) = urls_insert(urls=[NewUrl(url, 0)]).ids.values()
    Url.objects.filter(id=url_id).update(state="visited")
    return Page.objects.create(url_id=url_id, body_z=zlib.compress(body), content_type="text/html",
                               checksum=url[-8:], fetched_at=timezone.now())  # fmt: skip


@pytest.fixture
def sent(monkeypatch):
    out: list[int] = []
    monkeypatch.setattr(
        "crawlcore.services.render.enqueue_render_on_commit", lambda *, page_id, **kw: out.append(page_id)
    )
    monkeypatch.setattr("crawlcore.services.extract.servers_dispatch_with_due_work", lambda **kw: 0)
    return out


@pytest.mark.django_db
def test_auto_sends_a_shell_and_not_a_plain_page_and_says_why(settings, sent):
    settings.CRAWL_RENDER = "auto"
    shell, plain = _page("http://a.example/app", SHELL), _page("http://a.example/plain", PLAIN)
    pages_extract(page_ids=[shell.id, plain.id])
    assert sent == [shell.id]
    assert Page.objects.get(id=shell.id).render_reason == "empty_mount"
    assert Page.objects.get(id=plain.id).render_reason == ""


@pytest.mark.django_db
def test_never_sends_nothing_and_always_sends_every_html_page(settings, sent):
    settings.CRAWL_RENDER = "never"
    shell = _page("http://a.example/app", SHELL)
    pages_extract(page_ids=[shell.id])
    assert sent == []
    settings.CRAWL_RENDER = "always"
    plain = _page("http://a.example/plain", PLAIN)
    pages_extract(page_ids=[plain.id])
    assert sent == [plain.id] and Page.objects.get(id=plain.id).render_reason == "always"


@pytest.mark.django_db
def test_a_jobs_render_key_overrides_the_setting(settings, sent):
    settings.CRAWL_RENDER = "auto"
    spec, problems = job_spec_check({"name": "no-js", "seeds": ["http://j.example/"], "render": "never"})
    assert not problems
    job_save(spec=spec)
    job_start(name="no-js")
    seed = Url.objects.get(url="http://j.example/")
    Url.objects.filter(id=seed.id).update(state="visited")
    page = Page.objects.create(url=seed, body_z=zlib.compress(SHELL), content_type="text/html", checksum="s1",
                               fetched_at=timezone.now())  # fmt: skip
    pages_extract(page_ids=[page.id])
    assert sent == []
    assert job_spec_check({"name": "x", "seeds": ["http://j.example/"], "render": "sometimes"})[1] == {
        "render": "must be auto, always or never"
    }


@pytest.mark.django_db
def test_a_host_whose_pages_need_rendering_has_its_plain_looking_pages_rendered_too(settings, sent):
    settings.CRAWL_RENDER = "auto"
    shells = [_page(f"http://spa.example/{i}", SHELL) for i in range(4)]
    pages_extract(page_ids=[p.id for p in shells])
    server = Server.objects.get(host="spa.example")
    for _ in shells:  # each render gave links the raw body had not
        server_render_sample(server_id=server.id, gained=True)
    assert Server.objects.get(id=server.id).render_decision == "render"
    plain = _page("http://spa.example/plain", PLAIN)
    pages_extract(page_ids=[plain.id])
    assert plain.id in sent and Page.objects.get(id=plain.id).render_reason == "host"


@pytest.mark.django_db
def test_a_host_whose_samples_never_gain_stops_being_sampled(settings, sent):
    settings.CRAWL_RENDER = "auto"
    shells = [_page(f"http://ssr.example/{i}", SHELL) for i in range(4)]
    pages_extract(page_ids=[p.id for p in shells])
    server = Server.objects.get(host="ssr.example")
    for _ in shells:
        server_render_sample(server_id=server.id, gained=False)
    assert Server.objects.get(id=server.id).render_decision == "plain"
    sent.clear()
    more = _page("http://ssr.example/more", SHELL)
    pages_extract(page_ids=[more.id])
    assert sent == []
