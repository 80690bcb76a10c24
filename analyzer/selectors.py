"""The analyzer's report: counts and shares over the analysed pages, like the tables of seed 001 (Table 2.1,
the language and active-domain figures of its appendix). Every number is one GROUP BY or COUNT in the
database; nothing here walks the pages.

A share is count / total of its table, rounded to four decimals (0.2 is 20%); totals are given with
each table so the arithmetic can be checked.

Every table counts a page once: a page whose content duplicates an earlier page (same checksum, marked by
the extract agent) is the same page under another URL (`/` and `/index.html`) and is left out
(`counted_analyses`); the report gives how many were left out under pages.duplicates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from django.db.models import Count, Exists, OuterRef

from crawlcore.models import Page
from crawlcore.selectors import pages_duplicate

from .classify import CONTENT_CLASSES, TEXT_TYPES
from .domains import COUNTRY_CODES, FOREIGN, FOREIGN_NATIONAL_IP, NATIONAL, TLD_CLASSES, in_networks, tld_class
from .domains import national_sld as sld_of
from .language import language_name
from .models import PageAnalysis
from .services import active_domains, counted_page_domains, pages_pending


def share(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


def _rows(key: str, counts: Iterable[tuple[str, int]], total: int, **extra) -> list[dict]:
    return [{key: name, "pages": n, "share": share(n, total), **extra} for name, n in counts]


def _grouped(queryset, field: str) -> Counter[str]:
    return Counter(dict(queryset.values_list(field).annotate(n=Count("pk")).values_list(field, "n")))


def _ranked(counter: Counter[str]) -> list[tuple[str, int]]:
    """Largest first; ties by name, so the order is stable."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))


def counted_analyses():
    """The analyses the report counts: every analysed page but those that duplicate an earlier page."""
    return PageAnalysis.objects.exclude(pages_duplicate("page__"))


def analysis_report(*, national_tld: str, networks: Sequence = ()) -> dict:
    """The whole report as plain data (what `analyze --json` prints and the dashboard draws)."""
    analyses = counted_analyses()
    total = analyses.count()
    return {
        "national_tld": national_tld,
        "pages": {
            "stored": Page.objects.count(),
            "analyzed": total,
            "pending": pages_pending().count(),
            "duplicates": Page.objects.filter(pages_duplicate()).count(),
        },
        # Languages are a share of the pages that carry text (HTML, plain text): an image has none.
        "language_pages": (text_pages := analyses.filter(media_type__in=TEXT_TYPES).count()),
        "languages": _languages(analyses.filter(media_type__in=TEXT_TYPES), text_pages),
        **_domains(analyses, total, national_tld),
        **_content(analyses, total),
        "homepages": _homepages(analyses, national_tld),
        "active_domains": active_domain_counts(national_tld=national_tld, networks=networks),
    }


def _languages(analyses, total: int) -> list[dict]:
    counts = _grouped(analyses, "language")
    return [
        {"language": code, "name": language_name(code), "pages": n, "share": share(n, total)}
        for code, n in _ranked(counts)
    ]


def _domains(analyses, total: int, national_tld: str) -> dict:
    """Table 2.1 (pages by TLD class), the country codes inside it, and the national second-level domains."""
    by_tld = _grouped(analyses, "tld")
    classes: Counter[str] = Counter()
    country: Counter[str] = Counter()
    for tld, n in by_tld.items():
        cls = tld_class(tld)
        classes[cls] += n
        if cls == COUNTRY_CODES:
            country[tld] += n
    table = _rows("domain", ((c, classes[c]) for c in TLD_CLASSES), total)
    table.append({"domain": "total", "pages": total, "share": share(total, total)})

    national = analyses.filter(tld=national_tld)
    national_total = by_tld.get(national_tld, 0)
    slds: Counter[str] = Counter()
    for suffix, n in _grouped(national, "suffix").items():
        slds[sld_of(suffix, national_tld) or national_tld] += n  # no known suffix: counted as the TLD's own
    sld_rows = _rows("sld", _ranked(slds), national_total)
    sld_rows.append({"sld": "total", "pages": national_total, "share": share(national_total, national_total)})
    return {
        "domains": table,
        "country_codes": _rows("tld", _ranked(country), total),
        "national_slds": sld_rows,
    }


def _content(analyses, total: int) -> dict:
    pairs = Counter(
        {
            (mime, cls): n
            for mime, cls, n in analyses.values_list("media_type", "content_class")
            .annotate(n=Count("pk"))
            .values_list("media_type", "content_class", "n")
        }
    )
    classes: Counter[str] = Counter()
    for (_, cls), n in pairs.items():
        classes[cls] += n
    types = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "content_classes": _rows("class", ((c, classes[c]) for c in CONTENT_CLASSES), total),
        "media_types": [
            {"media_type": mime, "class": cls, "pages": n, "share": share(n, total)} for (mime, cls), n in types
        ],
    }


def _homepages(analyses, national_tld: str) -> dict:
    """Homepage_Stat: each distinct "host/~user", plus each host whose root page was crawled."""

    def count(qs) -> dict:
        user = qs.filter(homepage_kind="user").values("homepage").distinct().count()
        root = qs.filter(homepage_kind="root").values("homepage").distinct().count()
        return {"total": user + root, "user": user, "root": root}

    return {**count(analyses), "national": count(analyses.filter(tld=national_tld))}


def active_domain_counts(*, national_tld: str, networks: Sequence = ()) -> dict:
    """Find_Active_Domain: the registered domains the pages name (as their host, or in URLs, e-mail and FTP
    addresses), split into national names (under the national TLD), foreign names on a national IP range,
    and foreign names. `unresolved`: foreign names with no known address (only counted when ranges are
    configured: without them, no address would change the split)."""
    active = active_domains()
    total = active.count()
    national = active.filter(tld=national_tld)
    national_total = national.count()
    on_national_ip: Counter[str] = Counter()
    unresolved = 0
    if networks:
        foreign = active.exclude(tld=national_tld)
        for tld, ip in foreign.exclude(ip__isnull=True).values_list("tld", "ip").iterator(chunk_size=5000):
            if in_networks(ip, networks):
                on_national_ip[tld] += 1
        unresolved = foreign.filter(ip__isnull=True).count()
    national_ip_total = sum(on_national_ip.values())
    foreign_total = total - national_total - national_ip_total
    slds: Counter[str] = Counter()
    for suffix, n in _grouped(national, "suffix").items():
        slds[sld_of(suffix, national_tld) or national_tld] += n
    scopes = ((NATIONAL, national_total), (FOREIGN_NATIONAL_IP, national_ip_total), (FOREIGN, foreign_total))
    return {
        "total": total,
        NATIONAL: national_total,
        FOREIGN_NATIONAL_IP: national_ip_total,
        FOREIGN: foreign_total,
        "unresolved": unresolved,
        "scopes": [
            {"scope": scope, "domains": n, "share": share(n, total)}
            for scope, n in scopes
        ],
        "by_source": {
            source: counted_page_domains().filter(**{source: True}).values("domain_id").distinct().count()
            for source in ("web", "email", "ftp")
        },
        "national_slds": [
            {"sld": sld, "domains": n, "share": share(n, national_total)} for sld, n in _ranked(slds)
        ],
        "foreign_national_ip_tlds": [
            {"tld": tld, "domains": n, "share": share(n, national_ip_total)} for tld, n in _ranked(on_national_ip)
        ],
    }


def homepage_list() -> Iterator[tuple[str, str]]:
    """(homepage, kind) for every homepage, for the CSV export."""
    yield from (
        counted_analyses()
        .exclude(homepage="")
        .values_list("homepage", "homepage_kind")
        .distinct()
        .order_by("homepage")
        .iterator(chunk_size=5000)
    )


def active_domain_list(*, national_tld: str, networks: Sequence = ()) -> Iterator[dict]:
    """Every active domain with its scope and the sources that named it, for the CSV export."""
    named = {
        source: Exists(counted_page_domains().filter(domain_id=OuterRef("pk"), **{source: True}))
        for source in ("web", "email", "ftp")
    }
    rows = active_domains().annotate(**named).order_by("name").values_list("name", "tld", "ip", *named)
    for name, tld, ip, web, email, ftp in rows.iterator(chunk_size=5000):
        scope = NATIONAL if tld == national_tld else FOREIGN_NATIONAL_IP if in_networks(ip, networks) else FOREIGN
        yield {"domain": name, "scope": scope, "ip": ip or "", "web": web, "email": email, "ftp": ftp}
