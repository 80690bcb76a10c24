"""End to end: a small crawl (Servers, Urls, Pages written through the ORM, as the load agent leaves them),
then `manage.py analyze --json` / `--csv` report the numbers a hand count gives. Name lookups go to a
replaced resolver: no network."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from analyzer import resolve
from analyzer.models import PageAnalysis

from .test_analyzer_report import EN, JA, KO, add_page, html

pytestmark = pytest.mark.django_db

NATIONAL_CIDRS = ("211.32.0.0/11", "210.90.0.0/15")
DNS = {"daum.net": ["211.40.1.1"], "yahoo.co.jp": ["202.93.1.1"], "debian.org": ["130.89.1.1"], "apple.com": []}


def crawl_b() -> None:
    euc_kr = ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=euc-kr"></head><body>'
              f"<p>{KO}</p> 자료실: ftp.kaist.ac.kr 문의 admin@kaist.ac.kr "
              '<a href="http://www.daum.net/">다음</a></body></html>').encode("euc-kr")
    add_page("http://www.kaist.ac.kr/", "text/html", euc_kr)
    add_page("http://cs.kaist.ac.kr/~jhlee/", "text/html", html(EN))
    add_page("http://cs.kaist.ac.kr/~jhlee/pub/paper.ps", "application/postscript", b"%!PS")
    add_page("http://cs.kaist.ac.kr/~mkim", "text/html; charset=utf-8", html(KO))
    add_page("http://www.keris.or.kr/", "text/html",
             html(KO, '<a href="http://www.apple.com/">a</a> staff@keris.or.kr'))
    add_page("http://www.keris.or.kr/photo/a.jpg", "image/jpeg", b"\xff\xd8\xff")
    add_page("http://www.yahoo.co.jp/", "text/html", html(JA))
    add_page("http://www.debian.org/~joey/", "text/html", html(EN, "<pre>ftp://ftp.debian.org/debian</pre>"))
    add_page("http://www.daum.net/music/song.mp3", "audio/mpeg", b"ID3")
    add_page("http://www.chosun.com/", "text/html", html(KO, "<p>news@chosun.com</p>"), server_ip="210.91.0.5")
    add_page("http://www.chosun.com/style.css", "text/css", "p { margin: 0 }")


def analyze(*args: str) -> str:
    out = io.StringIO()
    call_command("analyze", *args, "--no-progress", stdout=out)
    return out.getvalue()


@pytest.fixture
def fake_dns(monkeypatch) -> list[str]:
    asked: list[str] = []

    def resolver(name: str) -> list[str]:
        asked.append(name)
        return DNS[name]

    monkeypatch.setattr(resolve, "system_resolver", resolver)
    return asked


@override_settings(ANALYZER_NATIONAL_CIDRS=NATIONAL_CIDRS)
def test_analyze_json_gives_the_hand_count(fake_dns):
    crawl_b()
    r = json.loads(analyze("--json"))

    assert r["run"]["analyzed"] == 11 and r["run"]["failed"] == 0
    assert r["pages"] == {"stored": 11, "analyzed": 11, "pending": 0, "duplicates": 0}
    assert r["language_pages"] == 7
    assert {x["language"]: x["pages"] for x in r["languages"]} == {"ko": 4, "en": 2, "ja": 1}
    assert {x["domain"]: x["pages"] for x in r["domains"]} == {
        "com": 2, "edu": 0, "gov": 0, "net": 1, "mil": 0, "org": 1, "country codes": 7, "other": 0, "total": 11
    }
    assert {x["domain"]: x["share"] for x in r["domains"]}["country codes"] == round(7 / 11, 4)
    assert [(x["tld"], x["pages"]) for x in r["country_codes"]] == [("kr", 6), ("jp", 1)]
    assert [(x["sld"], x["pages"]) for x in r["national_slds"]] == [("ac.kr", 4), ("or.kr", 2), ("total", 6)]
    assert {x["class"]: x["pages"] for x in r["content_classes"]} == {"document": 8, "multimedia": 2, "other": 1}
    assert r["homepages"] == {"total": 7, "user": 3, "root": 4, "national": {"total": 4, "user": 2, "root": 2}}
    active = r["active_domains"]
    assert {k: active[k] for k in ("total", "national", "foreign_national_ip", "foreign", "unresolved")} == {
        "total": 7, "national": 2, "foreign_national_ip": 2, "foreign": 3, "unresolved": 1
    }
    assert active["by_source"] == {"web": 7, "email": 3, "ftp": 2}
    assert [(x["sld"], x["domains"]) for x in active["national_slds"]] == [("ac.kr", 1), ("or.kr", 1)]
    # chosun.com's address came from the crawl; national names are never looked up.
    assert sorted(fake_dns) == ["apple.com", "daum.net", "debian.org", "yahoo.co.jp"]

    # A second run finds nothing new to analyse or look up, and reports the same.
    fake_dns.clear()
    again = json.loads(analyze("--json"))
    assert again["run"]["analyzed"] == 0 and fake_dns == []
    assert {k: v for k, v in again.items() if k != "run"} == {k: v for k, v in r.items() if k != "run"}


def test_national_tld_is_a_setting(fake_dns):
    crawl_b()
    analyze("--json")
    with override_settings(ANALYZER_NATIONAL_TLD="jp"):
        r = json.loads(analyze("--json", "--report-only"))
    assert r["national_tld"] == "jp" and "run" not in r
    assert [(x["sld"], x["pages"]) for x in r["national_slds"]] == [("co.jp", 1), ("total", 1)]
    assert (r["active_domains"]["national"], r["active_domains"]["foreign"]) == (1, 6)
    assert fake_dns == []  # no national ranges configured: nothing to look up


@override_settings(ANALYZER_NATIONAL_CIDRS=NATIONAL_CIDRS)
def test_analyze_csv_writes_the_tables_and_lists(tmp_path, fake_dns):
    crawl_b()
    out = analyze("--csv", str(tmp_path / "report"))
    assert "wrote 10 files" in out

    def read(name: str) -> list[dict]:
        with (tmp_path / "report" / name).open(encoding="utf-8") as f:
            return list(csv.DictReader(f))

    assert [(x["domain"], x["pages"]) for x in read("domains.csv")][-3:] == [
        ("country codes", "7"), ("other", "0"), ("total", "11")
    ]
    assert [(x["homepage"], x["kind"]) for x in read("homepages.csv")] == [
        ("cs.kaist.ac.kr/~jhlee", "user"), ("cs.kaist.ac.kr/~mkim", "user"), ("www.chosun.com/", "root"),
        ("www.debian.org/~joey", "user"), ("www.kaist.ac.kr/", "root"), ("www.keris.or.kr/", "root"),
        ("www.yahoo.co.jp/", "root"),
    ]
    domains = {x["domain"]: (x["scope"], x["web"], x["email"], x["ftp"]) for x in read("active_domains.csv")}
    assert domains == {
        "apple.com": ("foreign", "1", "0", "0"),
        "chosun.com": ("foreign_national_ip", "1", "1", "0"),
        "daum.net": ("foreign_national_ip", "1", "0", "0"),
        "debian.org": ("foreign", "1", "0", "1"),
        "kaist.ac.kr": ("national", "1", "1", "1"),
        "keris.or.kr": ("national", "1", "1", "0"),
        "yahoo.co.jp": ("foreign", "1", "0", "0"),
    }


def test_text_report_and_options(fake_dns):
    crawl_b()
    text = analyze("--limit", "5", "--batch-size", "2")
    assert PageAnalysis.objects.count() == 5 and "5 of 11 stored pages analysed (6 pending)" in text
    text = analyze()
    assert "Pages by domain (Table 2.1)" in text and "Homepages: 7 (3 ~user, 4 host roots)" in text
    with pytest.raises(CommandError):
        call_command("analyze", "--json", "--csv", "x")
    with pytest.raises(CommandError, match="batch-size"):
        analyze("--batch-size", "0")
