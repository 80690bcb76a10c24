"""Extract title, description, outgoing links and the fragment targets of an HTML page.

Runs once per fetched page, so it parses the document a single time with
lxml's HTML parser (libxml2) and reads the handful of tags it needs straight
from the tree, in C: no Python callback per tag. Bytes are decoded first, the
way browsers do (the HTTP charset, else UTF-8 when the bytes are valid UTF-8,
else bs4's UnicodeDammit, which sniffs <meta charset> and guesses). It never
raises on bad input: the web is full of truncated, mis-declared and binary
"HTML".

Each link keeps what a site owner needs to find it again on the page: its anchor text, the element and
attribute it came from, and `rel=nofollow`. Links to images, stylesheets and scripts are
resources (`Found.resource`): checked, never parsed.

What one page may cost is bounded, so that no single page holds up the extract agent (and the pages
batched with it): the bytes parsed (PARSE_MAX_BYTES), the attributes of one tag (MAX_TAG_ATTRIBUTES: libxml2
compares each attribute of a tag with all the tag's earlier ones, so a tag of many thousand attributes costs
seconds to minutes; a cheap scan of the bytes cuts such a tag down before libxml2 sees it), the nesting
(libxml2's own limit, past which it drops the rest of the page) and the links (the first `max_links` are
followed, up to MAX_LINKS_RECORDED more are kept to be recorded as not followed). A page over a bound is
parsed up to it and says which bound in `Extracted.limits`.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass, field

from lxml import etree
from w3lib.encoding import http_content_type_encoding

from .urlnorm import UrlError, canonicalize

__all__ = ["Extracted", "Found", "extract", "is_html"]

log = logging.getLogger(__name__)

MAX_TITLE = 512
MAX_DESCRIPTION = 1024
# Reason counted in ``Extracted.rejected`` for links beyond max_links and MAX_LINKS_RECORDED.
OVER_LIMIT = "over_limit"

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

MAX_ANCHOR_TEXT = 200
MAX_FRAGMENT = 200
MAX_FRAGMENTS = 20  # distinct #fragments kept per link
MAX_ANCHORS = 5000  # ids and names kept per page, for "missing anchor" checks
MAX_HEADINGS = 4096  # characters of heading text kept, for the search index
MAX_TEXT = 65536  # characters of body text kept, for the search index
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Elements whose text a reader never sees as the page's text.
_INVISIBLE = ("script", "style", "noscript", "template")

# The bounds of one page's parse, and the names `Extracted.limits` gives them.
MAX_LINKS = 5000  # links followed a page (extract's default max_links)
# Links past max_links kept, to be recorded as not followed (each a URL row and a link row: writing them is
# most of what such a page costs the extract agent, and the database's write lock is held meanwhile); past
# these, counted only (Extracted.rejected).
MAX_LINKS_RECORDED = 5000
PARSE_MAX_BYTES = 4 * 1024 * 1024  # of the body as decoded to UTF-8; the rest is not parsed
MAX_TAG_ATTRIBUTES = 1000  # attributes of one tag; the rest of the tag is dropped before parsing
LIMIT_BYTES = "bytes"
LIMIT_ATTRIBUTES = "attributes"
LIMIT_NESTING = "nesting"
LIMIT_LINKS = "links"
# Over the hard bounds of the child process a stored page is parsed in (crawlcore.services.extract_parse): its time
# and its memory. Whatever the input, the parse ends there.
LIMIT_TIME = "time"
LIMIT_MEMORY = "memory"

# One attribute inside a tag, as an HTML tokenizer reads it (a value is quoted only after '='), and a tag
# with more than MAX_TAG_ATTRIBUTES of them: its name and first MAX_TAG_ATTRIBUTES attributes (group 1), then
# the rest. A name is whatever libxml2 keeps as one: any character but a space, '/' or '>' first (a quote, an
# '=' or a '<' included: `<p "a 'b =c>` has three attributes), then any but those and '='; a scan that
# skipped such names would let a tag of them through whole. Every quantifier is possessive and each attribute
# an atomic group, so the scan never backtracks: one pass over the bytes, in C, that matches only the rare
# giant tag.
_ATTRIBUTE = rb"""(?>[\s/]*+[^\s>/][^\s>/=]*+(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|[^\s>]*+))?+)"""
_GIANT_TAG = re.compile(rb"(<[A-Za-z][^\s/>]*+%s{%d})%s++" % (_ATTRIBUTE, MAX_TAG_ATTRIBUTES, _ATTRIBUTE))

# Tag -> the attribute holding its link, and the element label stored with the link (a contract: the
# export's `element` column). Pages (followed) first, then resources (checked, not parsed).
LINK_ATTRS = {
    "a": "href",
    "area": "href",
    "frame": "src",
    "iframe": "src",
    "img": "src",
    "link": "href",
    "script": "src",
}
ELEMENT = {tag: f"{tag} {attr}" for tag, attr in LINK_ATTRS.items()}
RESOURCE_TAGS = frozenset({"img", "link", "script"})
# <link rel=...> values that name an origin or a relation, not a resource to fetch.
LINK_REL_SKIPPED = frozenset({"dns-prefetch", "preconnect"})

# Fragment targets: every id, and the name of an <a> (HTML's "indicated part of the document").
_ANCHORS = etree.XPath("//@id | //a/@name", smart_strings=False)
# Text of an element, in C: whitespace collapsed as normalize-space() does.
_TEXT = etree.XPath("normalize-space(.)", smart_strings=False)
_IMG_ALT = etree.XPath("normalize-space(.//img/@alt)", smart_strings=False)
# The text nodes of the body (of the whole document when it has no body), for the search index.
_BODY_TEXT = etree.XPath("/html/body//text()", smart_strings=False)
_ALL_TEXT = etree.XPath("//text()", smart_strings=False)


@dataclass(slots=True)
class Found:
    """One link of a page: `url` canonical (fragment dropped). A page may link to several #fragments of one
    target: `fragments` keeps each distinct one (as written after `#`) with the anchor text of its link."""

    url: str
    element: str  # "a href", "img src", ...
    text: str = ""  # anchor text; the alt text for an image or an image link
    nofollow: bool = False  # rel=nofollow on this link
    fragments: list[tuple[str, str]] | None = None

    @property
    def resource(self) -> bool:
        return self.element.split(" ", 1)[0] in RESOURCE_TAGS


@dataclass
class Extracted:
    title: str = ""
    description: str = ""
    links: list[Found] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)
    # Links past max_links (up to MAX_LINKS_RECORDED): recorded, not followed.
    over_limit: list[Found] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)  # the bounds the page went over (LIMIT_*), in order
    nofollow: bool = False  # <meta name=robots content=nofollow>: none of the page's links is followed
    base_url: str = ""
    # Element ids and <a name>s, for #fragment checks; None when the document has none to tell (a PDF).
    anchors: list[str] | None = field(default_factory=list)
    headings: str = ""  # the text of <h1>…<h6>, for the search index
    text: str = ""  # the visible text of the body (at most MAX_TEXT characters), for the search index
    problem: str = ""  # why the document could not be read, or only in part (crawler.pdf); "" when read whole

    @property
    def urls(self) -> list[str]:
        return [link.url for link in self.links]


def is_html(content_type: str | None) -> bool:
    """True for HTML/XHTML; a missing (or empty) Content-Type counts as HTML."""
    if not content_type:
        return True
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime in HTML_TYPES


def _collapse(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


def _decode(body: bytes, content_type: str | None) -> str:
    declared = http_content_type_encoding(content_type) if content_type else None
    if declared:
        try:
            return codecs.decode(body, declared, errors="replace")
        except LookupError:
            pass
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    # Imported here: most pages are UTF-8 or say their charset, and bs4 (soupsieve with it) is ~4 MB of every
    # parse process (crawler.child_pool) and worker that would import it for nothing.
    from bs4.dammit import UnicodeDammit

    text = UnicodeDammit(body, [], is_html=True).unicode_markup
    return text if text is not None else body.decode("latin-1")


def bounded(text: bytes) -> tuple[bytes, list[str]]:
    """`text` (UTF-8) cut to what one parse may cost: at most PARSE_MAX_BYTES, and no tag of more than
    MAX_TAG_ATTRIBUTES attributes (the rest of such a tag is dropped). The bounds it went over."""
    limits = []
    if len(text) > PARSE_MAX_BYTES:
        text = text[:PARSE_MAX_BYTES]
        limits.append(LIMIT_BYTES)
    cut = _GIANT_TAG.sub(rb"\1", text)
    if len(cut) != len(text):
        limits.append(LIMIT_ATTRIBUTES)
    return cut, limits


def _parse(body: bytes, content_type: str | None, limits: list[str]) -> etree._Element | None:
    # lxml reports each NUL character as a text node of its own, and HTML ignores them anyway: a decompressed
    # gzip bomb of NULs would cost memory and seconds. The text is handed to libxml2 as UTF-8 with the
    # encoding stated, so a <meta charset> in the page cannot make it decode the bytes a second time.
    text = _decode(body, content_type).replace("\0", "")
    data, over = bounded(text.encode("utf-8", errors="replace"))
    limits.extend(over)
    parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True)
    root = etree.fromstring(data, parser)
    # Past 256 levels libxml2 stops and drops the rest of the page (lxml's huge_tree would lift the limit).
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
        limits.append(LIMIT_NESTING)
    return root


def _effective_base(root: etree._Element, url: str) -> str:
    """The page URL, or the first <base href> when it is a valid http(s) URL."""
    try:
        page = canonicalize(url)
    except UrlError:
        page = url
    for base_tag in root.iter("base"):
        href = base_tag.get("href")
        if href is None:
            continue
        try:
            # Relative <base href> is legal and resolves against the document URL.
            return canonicalize(href, base=page)
        except UrlError:
            return page
    return page


def _meta_content(root: etree._Element, name: str) -> str | None:
    for meta in root.iter("meta"):
        if (meta.get("name") or "").strip().lower() == name:
            return meta.get("content") or ""
    return None


def _has_nofollow(robots: str | None) -> bool:
    if not robots:
        return False
    tokens = {t.strip().lower() for t in robots.replace(",", " ").split()}
    # "none" is shorthand for "noindex, nofollow".
    return bool(tokens & {"nofollow", "none"})


def _collapse_short(text: str | None) -> str:
    return " ".join(text.split())[:MAX_ANCHOR_TEXT] if text else ""


def _anchor_text(tag: etree._Element, name: str) -> str:
    if name == "a":
        if len(tag) == 0:  # the common case, plain text: no XPath evaluation
            return _collapse_short(tag.text)
        # An image link has no text of its own: a reader knows it by its picture's alt text.
        return (_TEXT(tag) or _IMG_ALT(tag))[:MAX_ANCHOR_TEXT]
    if name in ("img", "area"):
        return _collapse_short(tag.get("alt"))
    return ""


def _add_fragment(found: Found, raw: str, tag: etree._Element, name: str, text: str | None = None) -> None:
    fragment = raw.partition("#")[2].strip()[:MAX_FRAGMENT]
    if not fragment:
        return
    if found.fragments is None:
        found.fragments = []
    elif len(found.fragments) >= MAX_FRAGMENTS or any(f == fragment for f, _ in found.fragments):
        return
    found.fragments.append((fragment, _anchor_text(tag, name) if text is None else text))


def _collect_links(root: etree._Element, base: str, max_links: int, out: Extracted) -> None:
    seen: dict[str, Found] = {}
    links, rejected = out.links, out.rejected
    for tag in root.iter(*LINK_ATTRS):
        name = tag.tag
        raw = tag.get(LINK_ATTRS[name])
        if raw is None:
            continue
        rel = tag.get("rel")
        if rel is not None and name == "link" and LINK_REL_SKIPPED.intersection(rel.lower().split()):
            continue
        if len(out.over_limit) >= MAX_LINKS_RECORDED:
            # Past both bounds the rest is counted, not canonicalised (which is most of a link's cost).
            rejected[OVER_LIMIT] = rejected.get(OVER_LIMIT, 0) + 1
            continue
        try:
            link = canonicalize(raw, base=base)
        except UrlError as exc:
            rejected[exc.reason] = rejected.get(exc.reason, 0) + 1
            continue
        known = seen.get(link)
        if known is not None:
            # The first occurrence is the one reported; an image link's text can still come later.
            if not known.text:
                known.text = _anchor_text(tag, name)
            if "#" in raw:
                _add_fragment(known, raw, tag, name)
            continue
        over = len(links) >= max_links
        if name == "a" and not len(tag):  # the common case, a plain text link: inline, no XPath
            text = tag.text
            text = " ".join(text.split())[:MAX_ANCHOR_TEXT] if text else ""
        else:
            text = _anchor_text(tag, name)
        found = Found(
            link,
            ELEMENT[name],
            text,
            rel is not None and "nofollow" in rel.lower().split(),
        )
        if "#" in raw:
            _add_fragment(found, raw, tag, name, text)
        seen[link] = found
        (out.over_limit if over else links).append(found)
    if out.over_limit:
        out.limits.append(LIMIT_LINKS)


def extract(
    body: bytes,
    url: str,
    *,
    content_type: str | None = None,
    max_links: int = MAX_LINKS,
) -> Extracted:
    """Parse ``body`` (fetched from ``url``) and return what the crawler needs, within the bounds of one
    page (the module's docstring)."""
    out = Extracted(base_url=url)
    if not body:
        return out
    try:
        root = _parse(body, content_type, out.limits)
    except Exception:  # noqa: BLE001 - a parser bug must not kill the worker
        log.warning("could not parse %s", url[:200], exc_info=True)
        return out
    if root is None:  # nothing but whitespace, comments or a doctype
        return out
    out.base_url = _effective_base(root, url)
    title = next(root.iter("title"), None)
    if title is not None:
        out.title = _collapse("".join(title.itertext()), MAX_TITLE)
    out.description = _collapse(_meta_content(root, "description") or "", MAX_DESCRIPTION)
    out.nofollow = _has_nofollow(_meta_content(root, "robots"))
    _collect_links(root, out.base_url, max_links, out)
    out.anchors = list(dict.fromkeys(_ANCHORS(root)))[:MAX_ANCHORS]
    _collect_text(root, out)
    return out


def _collect_text(root: etree._Element, out: Extracted) -> None:
    """Headings and the visible text, for the search index: read last, since dropping the invisible
    elements changes the tree (their links are collected by then). The body's text nodes are joined with
    spaces (two cells or paragraphs are two words), in C; whitespace is left as it is (the index's
    tokenizers skip it; a snippet collapses it when shown), at most MAX_TEXT characters."""
    out.headings = _collapse(" ".join(_TEXT(h) for h in root.iter(*_HEADINGS)), MAX_HEADINGS)
    etree.strip_elements(root, *_INVISIBLE, with_tail=False)
    out.text = " ".join(_BODY_TEXT(root) or _ALL_TEXT(root))[:MAX_TEXT].strip()
