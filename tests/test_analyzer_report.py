"""The analyzer's services and report on SQLite: a hand-made crawl, analysed in streaming batches, reported
with the numbers a hand count gives; re-fetched pages; name resolution; the dashboard."""

from __future__ import annotations

import hashlib
import re
import zlib
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from django.utils import timezone

from analyzer.models import Domain, PageAnalysis, PageDomain
from analyzer.selectors import analysis_report
from analyzer.services import domains_resolve, pages_analyse, pages_pending
from crawlcore.models import Page, Server, Url
from crawler.netguard import parse_cidrs
from crawler.urlnorm import url_hash

pytestmark = pytest.mark.django_db

KO = "서울대학교 전산원은 학내 정보통신망을 운영하고 있습니다. 자세한 내용은 학과 사무실로 문의하시기 바랍니다."
EN = "The computing center operates the campus network and the mail servers of the university."
JA = "東京大学の情報基盤センターは学内ネットワークを運用しています。詳しくは事務室までお問い合わせください。"
ZH = "北京大学计算中心负责管理校园网络和电子邮件服务器。详细情况请向系办公室咨询。"


def add_page(url: str, content_type: str, body: str | bytes = b"", *, server_ip: str | None = None) -> Page:
    """A fetched page straight into the crawl's tables, as the load agent would leave it."""
    parts = urlsplit(url)
    server, _ = Server.objects.get_or_create(
        scheme=parts.scheme, host=parts.hostname, port=parts.port or {"http": 80, "https": 443}[parts.scheme],
        defaults={"ip": server_ip},
    )
    row = Url.objects.create(url=url, url_hash=url_hash(url), server=server, state="visited")
    raw = body.encode() if isinstance(body, str) else body
    return Page.objects.create(
        url=row, body_z=zlib.compress(raw), content_type=content_type, size=len(raw),
        checksum=hashlib.sha1(raw).hexdigest(), fetched_at=timezone.now(),
    )


def html(text: str, extra: str = "") -> str:
    return f"<html><head><title>t</title></head><body><p>{text}</p>{extra}</body></html>"


def crawl_a() -> None:
    """Fourteen pages; the hand count is in the test below."""
    add_page("http://www.snu.ac.kr/", "text/html; charset=utf-8",
             html(KO, 'webmaster@snu.ac.kr <a href="http://www.kaist.ac.kr/">KAIST</a>'))
    add_page("http://www.snu.ac.kr/~wkim/index.html", "text/html", html(EN, '<a href="ftp://ftp.snu.ac.kr/pub">f</a>'))
    add_page("http://www.snu.ac.kr/~wkim/papers/a.html", "text/html", html(KO))
    add_page("http://202.30.64.22/~wkim/", "text/html", html(JA))
    add_page("http://www.samsung.co.kr/index.html", "text/html", html(KO, "<p>info@samsung.com</p>"))
    add_page("http://www.mofe.go.kr/img/logo.png", "image/png", b"\x89PNG")
    add_page("http://www.example.com/doc.pdf", "application/pdf", b"%PDF-1.4 webmaster@pdf-only.com")
    add_page("http://www.mit.edu/~alice/", "text/html", html(EN))
    add_page("http://www.army.mil/", "text/html", html(EN))
    add_page("http://www.sina.com.cn/news.html", "text/html", html(ZH))
    add_page("http://naver.kr/", "text/html", html(KO))
    add_page("http://www.whitehouse.gov/movie.mpg", "video/mpeg", b"\x00\x00\x01\xba")
    add_page("http://www.w3.org/style.css", "text/css", "body { color: black } /* http://evil.example.org/ */")
    add_page("http://www.kornet.net/", "text/html",
             html(KO, '<a href="ftp://anonymous@ftp.kornet.net/">ftp</a> <a href="mailto:admin@kornet.net">m</a>'))


def test_report_matches_the_hand_count():
    crawl_a()
    outcome = pages_analyse(batch_size=4)
    assert (outcome.pages, outcome.failed) == (14, 0)
    r = analysis_report(national_tld="kr")

    assert r["pages"] == {"stored": 14, "analyzed": 14, "pending": 0, "duplicates": 0}
    # Ten pages carry text (HTML): five Korean, three English, one Japanese, one Chinese.
    assert r["language_pages"] == 10
    assert {x["language"]: (x["pages"], x["share"]) for x in r["languages"]} == {
        "ko": (5, 0.5), "en": (3, 0.3), "ja": (1, 0.1), "zh": (1, 0.1)
    }
    # Table 2.1: one page each under com, edu, gov, net, mil, org; seven under country codes (six .kr, one
    # .cn); one on a bare IP address (other).
    assert [(x["domain"], x["pages"], x["share"]) for x in r["domains"]] == [
        ("com", 1, 0.0714), ("edu", 1, 0.0714), ("gov", 1, 0.0714), ("net", 1, 0.0714), ("mil", 1, 0.0714),
        ("org", 1, 0.0714), ("country codes", 7, 0.5), ("other", 1, 0.0714), ("total", 14, 1.0),
    ]
    assert [(x["tld"], x["pages"]) for x in r["country_codes"]] == [("kr", 6), ("cn", 1)]
    assert [(x["sld"], x["pages"], x["share"]) for x in r["national_slds"]] == [
        ("ac.kr", 3, 0.5), ("co.kr", 1, 0.1667), ("go.kr", 1, 0.1667), ("kr", 1, 0.1667), ("total", 6, 1.0),
    ]
    # Eleven documents (ten HTML pages and a PDF), two multimedia (PNG, MPEG), one other (CSS).
    assert [(x["class"], x["pages"]) for x in r["content_classes"]] == [
        ("document", 11), ("multimedia", 2), ("other", 1)
    ]
    assert sum(x["pages"] for x in r["media_types"]) == 14
    # ~user homepages: snu ~wkim (two pages, one homepage), 202.30.64.22 ~wkim, mit ~alice. Host roots:
    # snu, samsung (index.html), army, naver, kornet. National (.kr): snu ~wkim + snu, samsung, naver.
    assert r["homepages"] == {
        "total": 8, "user": 3, "root": 5, "national": {"total": 4, "user": 1, "root": 3}
    }
    # Active domains: national snu.ac.kr, kaist.ac.kr, samsung.co.kr, mofe.go.kr, naver.kr; foreign
    # samsung.com, example.com, mit.edu, army.mil, sina.com.cn, whitehouse.gov, w3.org, kornet.net.
    # (The IP host names no domain; the PDF and the style sheet are not scanned.)
    active = r["active_domains"]
    assert (active["total"], active["national"], active["foreign_national_ip"], active["foreign"]) == (13, 5, 0, 8)
    assert active["by_source"] == {"web": 12, "email": 3, "ftp": 2}
    assert [(x["sld"], x["domains"]) for x in active["national_slds"]] == [
        ("ac.kr", 2), ("co.kr", 1), ("go.kr", 1), ("kr", 1)
    ]


def test_streaming_batches_give_the_same_result_and_report_progress():
    crawl_a()
    seen: list[int] = []
    pages_analyse(batch_size=3, progress=seen.append)
    assert seen == [3, 3, 3, 3, 2]
    small = analysis_report(national_tld="kr")
    PageAnalysis.objects.all().delete()
    pages_analyse(batch_size=1000)
    assert analysis_report(national_tld="kr") == small


def test_only_new_and_refetched_pages_are_analysed_again():
    crawl_a()
    pages_analyse()
    assert pages_pending().count() == 0 and pages_analyse().pages == 0
    # The home page of snu is fetched again: it now links to yonsei instead of kaist, in English.
    page = Page.objects.get(url__url="http://www.snu.ac.kr/")
    page.body_z = zlib.compress(html(EN, '<a href="http://www.yonsei.ac.kr/">Y</a>').encode())
    page.fetched_at = timezone.now() + timedelta(seconds=1)
    page.save()
    assert list(pages_pending().values_list("id", flat=True)) == [page.id]
    assert pages_analyse().pages == 1
    assert PageAnalysis.objects.get(page=page).language == "en"
    names = set(PageDomain.objects.filter(page_id=page.id).values_list("domain__name", flat=True))
    assert names == {"snu.ac.kr", "yonsei.ac.kr"}
    # kaist.ac.kr is still a Domain row, but no page names it now: it is no longer active.
    assert Domain.objects.filter(name="kaist.ac.kr").exists()
    active = analysis_report(national_tld="kr")["active_domains"]
    assert (active["total"], active["national"]) == (13, 5)


def test_deleting_a_page_takes_its_analysis_along():
    crawl_a()
    pages_analyse()
    Page.objects.filter(url__url="http://www.kornet.net/").delete()
    r = analysis_report(national_tld="kr")
    assert r["pages"]["analyzed"] == 13 and r["active_domains"]["foreign"] == 7


def test_no_national_ranges_means_no_lookups():
    crawl_a()
    pages_analyse()

    def resolver(name: str) -> list[str]:
        raise AssertionError(f"looked up {name}")

    assert domains_resolve(resolver=resolver, national_tld="kr", networks=()).asked == 0


def test_foreign_names_on_national_ranges():
    add_page("http://www.kornet.net/", "text/html", html(KO, "<p>help@hanmail.net http://www.yahoo.com/</p>"),
             server_ip="211.33.1.2")
    add_page("http://www.snu.ac.kr/", "text/html", html(KO, "<p>http://www.google.com/</p>"))
    pages_analyse()
    networks = parse_cidrs("211.32.0.0/11 ::ffff:0:0/96")
    asked: list[str] = []
    table = {"hanmail.net": ["211.40.1.1"], "yahoo.com": ["8.8.4.4", "211.41.0.1"], "google.com": []}

    def resolver(name: str) -> list[str]:
        asked.append(name)
        return table[name]

    out = domains_resolve(resolver=resolver, national_tld="kr", networks=networks)
    # kornet.net's address is the crawler's own (Server.ip); snu.ac.kr is national and needs none.
    assert sorted(asked) == ["google.com", "hanmail.net", "yahoo.com"]
    assert (out.asked, out.from_crawl, out.found) == (3, 1, 3)
    assert Domain.objects.get(name="yahoo.com").ip == "211.41.0.1"  # the national address is the one kept
    active = analysis_report(national_tld="kr", networks=networks)["active_domains"]
    assert (active["national"], active["foreign_national_ip"], active["foreign"], active["unresolved"]) == (1, 3, 1, 1)
    assert [(x["tld"], x["domains"]) for x in active["foreign_national_ip_tlds"]] == [("net", 2), ("com", 1)]
    # Each name is asked once.
    asked.clear()
    domains_resolve(resolver=resolver, national_tld="kr", networks=networks)
    assert asked == []


def test_dashboard_needs_a_login_and_escapes_what_pages_sent(client):
    add_page("http://www.snu.ac.kr/", "text/html", html(KO))
    add_page("http://evil.kr/x", "<script>alert(1)</script>", b"x")
    pages_analyse()
    url = reverse("analyzer:dashboard")
    assert url == "/analyzer/"
    response = client.get(url)
    assert response.status_code == 302 and "login" in response["Location"]
    user = User.objects.create_user("op", password="x")
    client.force_login(user)
    assert client.get(url).status_code == 403  # logged in, but in no reader group
    user.groups.add(Group.objects.get(name="operator"))
    response = client.get(url)
    body = response.content.decode()
    assert response.status_code == 200
    # No script but the site's own static files (the page's charts are SVG): what pages sent stays text.
    scripts = re.findall(r"<script[^>]*>", body)
    assert body.count("<svg") == 8 and all('src="/static/' in tag for tag in scripts)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "Korean (ko)" in body and "ac.kr" in body
