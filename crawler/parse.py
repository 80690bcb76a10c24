"""Extract title, description and outgoing links from an HTML page.

Runs once per fetched page, so it parses the document a single time with
lxml (through BeautifulSoup) and only builds tree nodes for the handful of
tags we read (a SoupStrainer).  It never raises on bad input: the web is full
of truncated, mis-declared and binary "HTML".
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

from bs4 import BeautifulSoup, SoupStrainer, Tag
from bs4.dammit import UnicodeDammit
from w3lib.encoding import http_content_type_encoding

from .urlnorm import UrlError, canonicalize

__all__ = ["Extracted", "extract", "is_html"]

log = logging.getLogger(__name__)

MAX_TITLE = 512
MAX_DESCRIPTION = 1024
# Reason recorded in ``Extracted.rejected`` for valid links beyond max_links.
OVER_LIMIT = "over_limit"

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Tag -> attribute holding a link we follow.
LINK_ATTRS = {"a": "href", "area": "href", "frame": "src", "iframe": "src"}

# Only these tags become tree nodes; everything else is skipped by the
# parser callback, which is what keeps extract() cheap on big pages.
_STRAINER = SoupStrainer(["title", "meta", "base", *LINK_ATTRS])


@dataclass
class Extracted:
    title: str = ""
    description: str = ""
    links: list[str] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)
    nofollow: bool = False
    base_url: str = ""


def is_html(content_type: str | None) -> bool:
    """True for HTML/XHTML; a missing (or empty) Content-Type counts as HTML."""
    if not content_type:
        return True
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime in HTML_TYPES


def _collapse(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


def _attr(tag: Tag, name: str) -> str | None:
    """A string attribute value; bs4 returns lists for multi-valued ones (rel, class)."""
    value = tag.get(name)
    if value is None:
        return None
    return value if isinstance(value, str) else " ".join(value)


def _make_soup(body: bytes, content_type: str | None) -> BeautifulSoup:
    # w3lib returns a *valid* Python codec name or None, so a bogus charset
    # ("charset=foo") falls back to bs4's own detection instead of crashing.
    encoding = http_content_type_encoding(content_type) if content_type else None
    with warnings.catch_warnings():
        # bs4 warns on inputs that look like URLs/filenames; irrelevant here.
        warnings.simplefilter("ignore")
        if b"\0" in body:
            # lxml reports each NUL character as a text node of its own, which bs4 collects: 2 MB of NULs
            # (a decompressed gzip bomb) cost ~180 MB and seconds. Decode first (a UTF-16 page's NUL bytes
            # are not NUL characters), then drop the NUL characters, which HTML ignores anyway.
            text = UnicodeDammit(body, [encoding] if encoding else [], is_html=True).unicode_markup
            if text is not None:
                return BeautifulSoup(text.replace("\0", ""), "lxml", parse_only=_STRAINER)
        return BeautifulSoup(body, "lxml", from_encoding=encoding, parse_only=_STRAINER)


def _effective_base(soup: BeautifulSoup, url: str) -> str:
    """The page URL, or the first <base href> when it is a valid http(s) URL."""
    try:
        page = canonicalize(url)
    except UrlError:
        page = url
    base_tag = soup.find("base", href=True)
    if base_tag is None:
        return page
    try:
        # Relative <base href> is legal and resolves against the document URL.
        return canonicalize(_attr(base_tag, "href") or "", base=page)
    except UrlError:
        return page


def _meta_content(soup: BeautifulSoup, name: str) -> str | None:
    for meta in soup.find_all("meta"):
        if (_attr(meta, "name") or "").strip().lower() == name:
            return _attr(meta, "content") or ""
    return None


def _has_nofollow(robots: str | None) -> bool:
    if not robots:
        return False
    tokens = {t.strip().lower() for t in robots.replace(",", " ").split()}
    # "none" is shorthand for "noindex, nofollow".
    return bool(tokens & {"nofollow", "none"})


def _collect_links(soup: BeautifulSoup, base: str, max_links: int, out: Extracted) -> None:
    seen: set[str] = set()
    for tag in soup.find_all(list(LINK_ATTRS)):
        raw = _attr(tag, LINK_ATTRS[tag.name])
        if raw is None:
            continue
        try:
            link = canonicalize(raw, base=base)
        except UrlError as exc:
            out.rejected[exc.reason] = out.rejected.get(exc.reason, 0) + 1
            continue
        if link in seen:
            continue
        if len(out.links) >= max_links:
            out.rejected[OVER_LIMIT] = out.rejected.get(OVER_LIMIT, 0) + 1
            continue
        seen.add(link)
        out.links.append(link)


def extract(
    body: bytes,
    url: str,
    *,
    content_type: str | None = None,
    max_links: int = 5000,
) -> Extracted:
    """Parse ``body`` (fetched from ``url``) and return what the crawler needs."""
    out = Extracted(base_url=url)
    if not body:
        return out
    try:
        soup = _make_soup(body, content_type)
    except Exception:  # noqa: BLE001 - a parser bug must not kill the worker
        log.warning("could not parse %s", url[:200], exc_info=True)
        return out
    out.base_url = _effective_base(soup, url)
    if soup.title is not None:
        out.title = _collapse(soup.title.get_text(), MAX_TITLE)
    out.description = _collapse(_meta_content(soup, "description") or "", MAX_DESCRIPTION)
    out.nofollow = _has_nofollow(_meta_content(soup, "robots"))
    _collect_links(soup, out.base_url, max_links, out)
    return out
