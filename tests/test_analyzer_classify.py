"""The analyzer's pure classifiers, each on hand-made input: no Django, no database, no network."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import Counter

import pytest

from analyzer.charts import bar_chart
from analyzer.classify import analyze_page, content_class, decode, homepage_key, media_type
from analyzer.config import national_tld
from analyzer.domains import (
    EMAIL,
    FTP,
    WEB,
    HostInfo,
    address_hosts,
    domain_scope,
    host_info,
    national_sld,
    page_domains,
    tld_class,
)
from analyzer.language import detect_language, visible_text
from analyzer.resolve import resolve_many
from analyzer.synthetic import LANGUAGES, language_samples
from crawler.config import ConfigError, Env

# --- language -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, language",
    [
        ("서울대학교 전산원은 학내 정보통신망을 운영하고 있습니다.", "ko"),
        ("Home | Login | Sitemap 우리 연구실은 병렬 처리와 컴퓨터 구조를 연구합니다. Copyright", "ko"),
        ("The library stays open until six in the evening on weekends.", "en"),
        ("図書館は週末も午後六時まで開いています。", "ja"),
        ("图书馆周末也开放到下午六点。", "zh"),
        ("Die Bibliothek ist auch am Wochenende bis achtzehn Uhr geöffnet.", "de"),
        ("La bibliothèque reste ouverte jusqu'à dix-huit heures le week-end.", "fr"),
        ("Библиотека работает до шести часов вечера даже по выходным.", "ru"),
    ],
)
def test_language_of_hand_made_text(text, language):
    assert detect_language(text) == language


@pytest.mark.parametrize("text", ["", "2024-12-01", " | · | ", "ab"])
def test_too_little_text_has_no_language(text):
    assert detect_language(text) == ""


def test_language_accuracy_on_labelled_samples():
    samples = language_samples()
    assert len(samples) >= 300 and {s.language for s in samples} == set(LANGUAGES)
    right: Counter[str] = Counter()
    started = time.perf_counter()
    for sample in samples:
        right[sample.language] += detect_language(sample.text) == sample.language
    seconds = time.perf_counter() - started
    accuracy = sum(right.values()) / len(samples)
    per_language = {lang: right[lang] / sum(s.language == lang for s in samples) for lang in LANGUAGES}
    print(f"\nlanguage accuracy {accuracy:.1%} on {len(samples)} samples ({len(samples) / seconds:,.0f}/s): "
          + ", ".join(f"{lang} {acc:.0%}" for lang, acc in per_language.items()))
    assert accuracy >= 0.95
    # The languages of a Korean crawl, and its neighbours, are never confused even in two-word snippets.
    assert min(per_language[lang] for lang in ("ko", "ja", "zh", "en")) >= 0.95
    assert min(per_language.values()) >= 0.8


def test_visible_text_drops_scripts_styles_comments_and_tags():
    html = (
        "<html><head><title>제목</title><style>p { color: red }</style><script>var x = '<b>';</script></head>"
        "<body><!-- hidden comment --><p>보이는&nbsp;글 &lt;b&gt;</p><noscript>no</noscript></body></html>"
    )
    assert visible_text(html) == "제목 보이는 글 <b>"  # &nbsp; is white space too


def test_declared_legacy_charset_is_decoded():
    body = '<meta charset="euc-kr"><p>국내 인터넷 사용자는 빠르게 늘어나고 있다.</p>'.encode("euc-kr")
    assert "국내 인터넷" in decode(body, "text/html")
    assert analyze_page("http://a.kr/", "text/html", body).language == "ko"
    # The header wins over nothing; UTF-8 without any declaration is recognised as such.
    assert "日本語" in decode("<p>日本語</p>".encode(), None)


# --- domains --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tld, row",
    [("com", "com"), ("edu", "edu"), ("gov", "gov"), ("net", "net"), ("mil", "mil"), ("org", "org"),
     ("kr", "country codes"), ("jp", "country codes"), ("info", "other"), ("xn--3e0b707e", "other"), ("", "other")],
)
def test_table_2_1_rows(tld, row):
    assert tld_class(tld) == row


def test_host_info_of_names_and_addresses():
    assert host_info("www.SNU.ac.kr.") == HostInfo("kr", "ac.kr", "snu.ac.kr")
    assert host_info("x.es.seoul.kr") == HostInfo("kr", "seoul.kr", "es.seoul.kr")
    assert host_info("naver.kr") == HostInfo("kr", "kr", "naver.kr")
    assert host_info("www.mit.edu") == HostInfo("edu", "edu", "mit.edu")
    assert host_info("202.30.64.22") == HostInfo("", "", "")
    assert host_info("[::1]") == HostInfo("", "", "")
    assert host_info("localhost").domain == ""


@pytest.mark.parametrize(
    "suffix, national, sld",
    [("ac.kr", "kr", "ac.kr"), ("co.kr", "kr", "co.kr"), ("go.kr", "kr", "go.kr"), ("or.kr", "kr", "or.kr"),
     ("seoul.kr", "kr", "seoul.kr"), ("kr", "kr", "kr"), ("com", "kr", None), ("co.jp", "kr", None),
     ("co.jp", "jp", "co.jp")],
)
def test_national_second_level_domains(suffix, national, sld):
    assert national_sld(suffix, national) == sld


def test_addresses_in_a_page():
    html = """
      <a href="http://www.kaist.ac.kr/index.html">KAIST</a> <a href="https://user@secure.example.com:8443/x">s</a>
      mail <a href="mailto:Webmaster@SNU.ac.kr">us</a> or kim.cs+web@mail.postech.ac.kr.
      <a href="ftp://anonymous:guest@ftp.kornet.net/pub">ftp</a> and ftp.hanyang.ac.kr mirrors.
      <img src="logo@2x.png"> path/to/a@b.com http://202.30.64.22/~wkim
    """
    found = set(address_hosts(html))
    # Not "guest@ftp.kornet.net" as an e-mail address, not path/to/a@b.com, not the IP address as a name;
    # "2x.png" looks like a host name here, and has no registered domain (page_domains drops it).
    assert found == {
        ("www.kaist.ac.kr", WEB), ("secure.example.com", WEB),
        ("SNU.ac.kr", EMAIL), ("mail.postech.ac.kr", EMAIL), ("2x.png", EMAIL),
        ("ftp.kornet.net", FTP), ("ftp.hanyang.ac.kr", FTP),
    }
    assert set(page_domains(html)) == {"kaist.ac.kr", "example.com", "snu.ac.kr", "postech.ac.kr", "kornet.net",
                                       "hanyang.ac.kr"}


def test_page_domains_are_registered_domains_with_their_sources():
    text = 'Write to webmaster@snu.ac.kr. <a href="http://www.snu.ac.kr/">home</a> ftp://ftp.snu.ac.kr/ ' \
           "http://10.0.0.1/ http://localhost/"
    assert page_domains(text, own_host="cse.snu.ac.kr") == {"snu.ac.kr": frozenset({WEB, EMAIL, FTP})}
    assert page_domains("", own_host="202.30.64.22") == {}


def test_find_active_domain_split():
    nets = [ipaddress.ip_network("211.32.0.0/11")]
    assert domain_scope("kr", None, national_tld="kr", networks=nets) == "national"
    assert domain_scope("com", "211.33.1.2", national_tld="kr", networks=nets) == "foreign_national_ip"
    assert domain_scope("com", "8.8.8.8", national_tld="kr", networks=nets) == "foreign"
    assert domain_scope("net", None, national_tld="kr", networks=nets) == "foreign"
    assert domain_scope("kr", "8.8.8.8", national_tld="jp", networks=()) == "foreign"


def test_resolver_is_replaceable_and_failures_mean_no_address():
    table = {"kornet.net": ["211.33.1.2"], "naver.com": ["8.8.8.8", "211.33.9.9"]}

    def resolver(name: str) -> list[str]:
        if name == "broken.com":
            raise OSError("SERVFAIL")
        return table.get(name, [])

    out = resolve_many(resolver, ["kornet.net", "naver.com", "nowhere.com", "broken.com", "kornet.net"])
    assert out == {"kornet.net": ["211.33.1.2"], "naver.com": ["8.8.8.8", "211.33.9.9"], "nowhere.com": [],
                   "broken.com": []}


def test_a_hanging_lookup_is_abandoned_at_the_timeout():
    release = threading.Event()

    def resolver(name: str) -> list[str]:
        if name == "slow.com":
            release.wait(5)
        return ["1.2.3.4"]

    started = time.perf_counter()
    out = resolve_many(resolver, ["slow.com", "fast.com"], timeout=0.3)
    release.set()
    assert out == {"slow.com": [], "fast.com": ["1.2.3.4"]}
    assert time.perf_counter() - started < 2


# --- content types and homepages ------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type, url, mime, cls",
    [
        ("text/html; charset=EUC-KR", "http://a.kr/", "text/html", "document"),
        ("application/pdf", "http://a.kr/x", "application/pdf", "document"),
        ("application/x-hwp", "http://a.kr/x.hwp", "application/x-hwp", "document"),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "", None, "document"),
        ("image/png", "http://a.kr/a.png", "image/png", "multimedia"),
        ("video/mpeg", "", "video/mpeg", "multimedia"),
        ("application/x-shockwave-flash", "", "application/x-shockwave-flash", "multimedia"),
        ("application/octet-stream", "http://a.kr/intro.swf", "application/x-shockwave-flash", "multimedia"),
        ("", "http://a.kr/photo.JPG", "image/jpeg", "multimedia"),
        ("", "http://a.kr/list.php", "text/html", "document"),
        ("text/css", "", "text/css", "other"),
        ("application/zip", "", "application/zip", "other"),
        ("", "http://a.kr/noext", "", "other"),
    ],
)
def test_content_types_documents_against_multimedia(content_type, url, mime, cls):
    found = media_type(content_type, url)
    if mime is not None:
        assert found == mime
    assert content_class(found) == cls


@pytest.mark.parametrize(
    "url, key",
    [
        ("http://snu.ac.kr/~wkim", ("user", "snu.ac.kr/~wkim")),
        ("http://snu.ac.kr/~wkim/", ("user", "snu.ac.kr/~wkim")),
        ("https://snu.ac.kr/~wkim/html/papers/a.html?x=1", ("user", "snu.ac.kr/~wkim")),
        ("http://snu.ac.kr/%7Ewkim/", ("user", "snu.ac.kr/~wkim")),
        ("http://202.30.64.22/~wkim", ("user", "202.30.64.22/~wkim")),
        ("http://SNU.ac.kr:8080/~wkim/", ("user", "snu.ac.kr:8080/~wkim")),
        ("http://snu.ac.kr/", ("root", "snu.ac.kr/")),
        ("http://snu.ac.kr", ("root", "snu.ac.kr/")),
        ("http://snu.ac.kr/index.html", ("root", "snu.ac.kr/")),
        ("http://snu.ac.kr:80/Default.asp", ("root", "snu.ac.kr/")),
        ("http://snu.ac.kr/?page=2", ("", "")),
        ("http://snu.ac.kr/people/~wkim/", ("", "")),
        ("http://snu.ac.kr/~/", ("", "")),
        ("http://snu.ac.kr/about.html", ("", "")),
        ("not a url", ("", "")),
    ],
)
def test_homepage_keys(url, key):
    assert homepage_key(url) == key


def test_analyze_page_never_decompresses_a_picture():
    def body() -> bytes:
        raise AssertionError("an image's body was read")

    facts = analyze_page("http://www.mofe.go.kr/img/logo.gif", "image/gif", body)
    assert (facts.language, facts.content_class, facts.tld, facts.suffix) == ("", "multimedia", "kr", "go.kr")
    assert facts.domains == {"mofe.go.kr": frozenset({WEB})}


def test_analyze_page_survives_hostile_bytes():
    facts = analyze_page("http://x.com/", "text/html; charset=bogus", b"\xff\xfe\x00<\x00\x80" * 1000)
    assert facts.media_type == "text/html" and facts.domains == {"x.com": frozenset({WEB})}


# --- settings and charts --------------------------------------------------------------------------


def test_national_tld_setting_is_validated_and_named():
    assert national_tld(Env({}), "ANALYZER_NATIONAL_TLD", "kr") == "kr"
    assert national_tld(Env({"ANALYZER_NATIONAL_TLD": ".JP"}), "ANALYZER_NATIONAL_TLD", "kr") == "jp"
    with pytest.raises(ConfigError, match="ANALYZER_NATIONAL_TLD='co.kr'"):
        national_tld(Env({"ANALYZER_NATIONAL_TLD": "co.kr"}), "ANALYZER_NATIONAL_TLD", "kr")


def test_bar_chart_geometry():
    chart = bar_chart("t", [("ko", 300, 0.75), ("en", 100, 0.25), ("ja", 0, 0.0)])
    ko, en, ja = chart.bars
    assert abs(ko.width - 3 * en.width) <= 1 and ja.width == 0
    assert ko.value_text == "300 (75.0%)" and ko.y < en.y < ja.y
    many = bar_chart("t", [(f"l{i}", 1, 0.05) for i in range(20)], max_rows=5)
    assert [b.label for b in many.bars][-1] == "… 16 more" and many.bars[-1].value_text == "16 (80.0%)"
