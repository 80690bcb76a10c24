"""What the analyzer learns from one stored page (pure; no Django): its language, host, TLD and public
suffix, content type and class (documents against multimedia), whether it is a homepage (seed 001's
Homepage_Stat), and the domains it names (Find_Active_Domain). The services store this per page; the
selectors count it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from w3lib.encoding import html_to_unicode

from crawler.pdf import PDF_TYPES, read_pdf

from .domains import host_info, page_domains
from .language import detect_language, visible_text

__all__ = ["PageFacts", "analyze_page", "content_class", "homepage_key", "media_type"]

DOCUMENT, MULTIMEDIA, OTHER = "document", "multimedia", "other"
CONTENT_CLASSES = (DOCUMENT, MULTIMEDIA, OTHER)

# Text a reader reads: pages, plain text, office and print formats, Korean word processors (HWP).
DOCUMENT_TYPES = frozenset({
    "text/html", "application/xhtml+xml", "text/plain", "text/xml", "application/xml", "text/rtf",
    "application/rtf", "application/pdf", "application/postscript", "application/msword",
    "application/vnd.ms-excel", "application/vnd.ms-powerpoint", "application/x-hwp", "application/haansofthwp",
    "application/vnd.hancom.hwp", "application/vnd.hancom.hwpx", "application/hwp+zip", "text/sgml",
})
DOCUMENT_PREFIXES = ("application/vnd.openxmlformats-officedocument.", "application/vnd.oasis.opendocument.")
# Pictures, sound and video, and the players' formats of the time (Flash, RealMedia).
MULTIMEDIA_PREFIXES = ("image/", "audio/", "video/")
MULTIMEDIA_TYPES = frozenset({
    "application/x-shockwave-flash", "application/vnd.adobe.flash.movie", "application/vnd.rn-realmedia",
    "application/x-pn-realaudio", "application/ogg", "application/x-director", "application/smil",
})
# Types whose body is (mostly) text in a language; a page without a Content-Type is read as HTML too,
# as the crawler does.
TEXT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain", "text/xml", "application/xml", ""})

# File extensions, for a page served without a usable Content-Type (none, or application/octet-stream).
_BY_EXTENSION = {
    **dict.fromkeys(("html", "htm", "shtml", "php", "php3", "asp", "aspx", "jsp", "cgi"), "text/html"),
    "txt": "text/plain", "pdf": "application/pdf", "doc": "application/msword", "hwp": "application/x-hwp",
    "ps": "application/postscript", "rtf": "application/rtf", "xls": "application/vnd.ms-excel",
    "ppt": "application/vnd.ms-powerpoint",
    "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "png": "image/png", "bmp": "image/bmp",
    "svg": "image/svg+xml", "webp": "image/webp", "ico": "image/x-icon",
    "mp3": "audio/mpeg", "wav": "audio/wav", "wma": "audio/x-ms-wma", "ra": "audio/x-pn-realaudio",
    "mid": "audio/midi", "ogg": "audio/ogg",
    "mpg": "video/mpeg", "mpeg": "video/mpeg", "avi": "video/x-msvideo", "wmv": "video/x-ms-wmv",
    "asf": "video/x-ms-asf", "mov": "video/quicktime", "mp4": "video/mp4", "webm": "video/webm",
    "rm": "application/vnd.rn-realmedia", "swf": "application/x-shockwave-flash",
}
# A root URL with one of these names is the host's home page as much as "/" is.
_INDEX_NAMES = frozenset(
    f"{stem}.{ext}" for stem in ("index", "default") for ext in ("html", "htm", "shtml", "php", "asp", "aspx", "jsp")
)
# Decoding and scanning stop here: enough for the language and the addresses of any real page.
MAX_SCAN_BYTES = 1 << 20


@dataclass(frozen=True)
class PageFacts:
    language: str  # ISO 639-1, "" when none could be told (no text, or not a text type)
    host: str
    tld: str
    suffix: str
    media_type: str  # "text/html"; "" when unknown
    content_class: str  # one of CONTENT_CLASSES
    homepage_kind: str  # "user" (a ~user directory), "root" (the host's home page) or ""
    homepage: str  # "host/~user" or "host/" for a homepage; "" otherwise
    domains: dict[str, frozenset[str]] = field(default_factory=dict)  # registered domain -> sources


def media_type(content_type: str | None, url: str = "") -> str:
    """The lower-cased type of a Content-Type header without parameters; from the URL's extension when
    the header is missing or says only application/octet-stream."""
    mime = (content_type or "").split(";", 1)[0].strip().lower()[:100]
    if mime and mime != "application/octet-stream":
        return mime
    ext = posixpath.splitext(urlsplit(url).path)[1].lstrip(".").lower()
    return _BY_EXTENSION.get(ext, mime)


def content_class(mime: str) -> str:
    """document, multimedia or other (style sheets, scripts, archives, unknown types)."""
    if mime in DOCUMENT_TYPES or mime.startswith(DOCUMENT_PREFIXES):
        return DOCUMENT
    if mime in MULTIMEDIA_TYPES or mime.startswith(MULTIMEDIA_PREFIXES):
        return MULTIMEDIA
    return OTHER


def homepage_key(url: str) -> tuple[str, str]:
    """Homepage_Stat's test. A URL whose first path segment starts with `~` belongs to the homepage
    "host/~user" (one per host and segment, whatever lies below it); the host's root ("/", "/index.html")
    is the homepage "host/". Anything else: ("", "")."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError:
        return "", ""
    if not host:
        return "", ""
    if port and port != {"http": 80, "https": 443}.get(parts.scheme.lower()):
        host = f"{host}:{port}"
    segments = parts.path.split("/")
    first = unquote(segments[1]) if len(segments) > 1 else ""
    if first.startswith("~") and len(first) > 1:
        return "user", f"{host}/{first}"
    if len(segments) <= 2 and (first == "" or first.lower() in _INDEX_NAMES) and not parts.query:
        return "root", f"{host}/"
    return "", ""


def decode(body: bytes, content_type: str | None) -> str:
    """Body as text: charset from the BOM, the header or a <meta> tag; else UTF-8 if it is valid UTF-8,
    else UTF-8 with replacement characters (a page in an undeclared legacy charset gets no language)."""
    _, text = html_to_unicode(content_type or None, body[:MAX_SCAN_BYTES], auto_detect_fun=_utf8_if_valid)
    return text


def _utf8_if_valid(body: bytes) -> str | None:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by MAX_SCAN_BYTES is still UTF-8.
        return "utf-8" if exc.start >= len(body) - 3 else None
    return "utf-8"


def analyze_page(
    url: str, content_type: str | None, body: bytes | Callable[[], bytes], *, pdf_text: str | None = None
) -> PageFacts:
    """Everything the analyzer stores about one page. Never raises on what a server sent. `body` may be a
    function returning it, called only for text types and PDFs (an image's body is never decompressed; a
    PDF's must be whole: its index is at its end). `pdf_text`: a PDF's text as the extract agent kept it
    (crawlcore's Page.text), read instead of the PDF itself (a read costs seconds, outside any child)."""
    host = (urlsplit(url).hostname or "").rstrip(".")
    info = host_info(host)
    mime = media_type(content_type, url)
    kind, homepage = homepage_key(url)
    language = ""
    text = ""
    if mime in TEXT_TYPES:
        raw = body() if callable(body) else body
        text = decode(raw, content_type) if raw else ""
        language = detect_language(visible_text(text) if mime != "text/plain" else text)
    elif mime in PDF_TYPES and pdf_text is not None:
        text = pdf_text
        language = detect_language(text)
    elif mime in PDF_TYPES:  # its text, read as the extract agent reads it (bounded; never raises)
        raw = body() if callable(body) else body
        text = read_pdf(raw, url).text if raw else ""
        language = detect_language(text)
    return PageFacts(
        language=language,
        host=host,
        tld=info.tld,
        suffix=info.suffix,
        media_type=mime,
        content_class=content_class(mime),
        homepage_kind=kind,
        homepage=homepage,
        domains=page_domains(text, own_host=host),
    )
