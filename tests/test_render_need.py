"""The render detector and the per-host decision (crawler.render_need): pure, no browser."""

from __future__ import annotations

import pytest

from crawler import render_need as rn
from crawler.parse import extract

PLAIN = (
    "<html><head><title>Plain</title><script>var _paq = window._paq || []; _paq.push(['trackPageView']);</script>"
    "</head><body><h1>Plain</h1><p>" + "A long paragraph of real text. " * 20 + "</p>"
    '<a href="/about">About</a></body></html>'
)


def reason(html: str, url: str = "http://s.test/") -> str:
    ex = extract(html.encode(), url, content_type="text/html")
    return rn.render_reason(html.encode(), text=ex.text, links=ex.urls)


def test_a_plain_page_with_an_analytics_script_is_not_flagged():
    assert reason(PLAIN) == ""


def test_a_page_without_scripts_is_never_flagged_however_thin():
    assert reason("<html><body><p>hi</p></body></html>") == ""


@pytest.mark.parametrize("mount", ["root", "app", "__next"])
def test_an_empty_mount_element_is_flagged(mount):
    html = f'<html><body><div id="{mount}"></div><script src="/main.js"></script></body></html>'
    assert reason(html) == rn.EMPTY_MOUNT


def test_a_filled_mount_element_is_not_taken_for_empty():
    html = '<html><body><div id="root"><p>' + "server-rendered text " * 20 + "</p></div><script src=/m.js></script>"
    assert reason(html) == ""


def test_a_noscript_notice_asking_for_javascript_is_flagged():
    html = "<body><noscript>You need to enable JavaScript to run this app.</noscript>" + PLAIN + "</body>"
    assert reason(html) == rn.NOSCRIPT


def test_links_written_only_in_an_inline_script_are_flagged():
    html = PLAIN.replace("</body>", "<script>document.write('<a href=\"/only-in-script\">x</a>'.replace('x','y'));"
                         "var next = '/catalogue/page-2';</script></body>")  # fmt: skip
    assert reason(html) == rn.SCRIPT_LINKS


def test_a_path_the_page_already_links_is_no_script_link():
    html = PLAIN.replace("</body>", "<script>var about = '/about';</script></body>")
    assert reason(html) == ""


def test_json_data_and_script_resources_are_not_script_links():
    html = PLAIN.replace(
        "</body>",
        '<script type="application/ld+json">{"url": "/elsewhere"}</script>'
        "<script>load('/static/app.js'); load('/img/logo.png');</script></body>",
    )
    assert reason(html) == ""


def test_thin_text_with_scripts_is_flagged():
    assert reason("<html><body><p>Loading</p><script src=/bundle.js></script></body></html>") == rn.THIN_TEXT


def test_a_framework_fingerprint_with_little_text_is_flagged_and_with_an_article_is_not():
    shell = '<html><body data-reactroot=""><p>' + "word " * 60 + "</p><script src=/r.js></script></body></html>"
    assert reason(shell) == rn.FRAMEWORK
    article = shell.replace("word " * 60, "word " * 400)
    assert reason(article) == ""


def test_render_gain_counts_new_links_or_much_more_text():
    assert rn.render_gain(raw_links={"a"}, dom_links={"a", "b"}, raw_text="x", dom_text="x")
    assert not rn.render_gain(raw_links={"a"}, dom_links={"a"}, raw_text="x" * 500, dom_text="x" * 520)
    assert rn.render_gain(raw_links=set(), dom_links=set(), raw_text="", dom_text="y" * 150)


def test_a_host_whose_pages_mostly_need_rendering_renders_every_page():
    d = rn.HostDecision(decide_after=4, render_share=0.5)
    assert d.decide(current="", seen=3, samples=3, gains=3) == rn.HostRender.SAMPLING  # too early
    assert d.decide(current="", seen=4, samples=4, gains=3) == rn.HostRender.RENDER
    assert d.wants(decision="render", flagged=False, seen_since=0)


def test_a_host_with_a_quarter_of_js_pages_keeps_sampling_its_flagged_pages_only():
    d = rn.HostDecision(decide_after=4, render_share=0.5)
    assert d.decide(current="", seen=40, samples=10, gains=10) == rn.HostRender.SAMPLING
    assert d.wants(decision="", flagged=True, seen_since=0)
    assert not d.wants(decision="", flagged=False, seen_since=0)


def test_a_host_whose_samples_never_gain_stops_being_sampled_but_for_a_recheck():
    d = rn.HostDecision(decide_after=4, recheck_every=50)
    assert d.decide(current="", seen=20, samples=4, gains=0) == rn.HostRender.PLAIN
    assert not d.wants(decision="plain", flagged=True, seen_since=3)
    assert d.wants(decision="plain", flagged=True, seen_since=50)
    assert d.decide(current="plain", seen=80, samples=5, gains=1) == rn.HostRender.SAMPLING


def test_a_render_host_whose_share_drops_goes_back_to_sampling():
    d = rn.HostDecision(decide_after=4, render_share=0.5)
    assert d.decide(current="render", seen=100, samples=60, gains=20) == rn.HostRender.SAMPLING


def test_a_hostile_page_costs_the_detector_little():
    import time

    bodies = [
        b"<div " * 200_000,
        b"<noscript>" * 100_000,
        b"<script>'/a'" * 100_000,
        b'<div id="root" ' + b"x" * 1_000_000,
        b"<script>" + b"'/p'," * 300_000 + b"</script>",
    ]
    for body in bodies:
        started = time.process_time()
        rn.render_reason(body, text="", links=[])
        assert time.process_time() - started < 2.0, body[:20]
