"""Text, title and links of a PDF document, read with pypdf within bounds (pure; no Django).

A PDF is read like an HTML page: what it says goes to the search index and the analyzer, and its links
(URI actions of link annotations) to the frontier and the link reports. The web's PDFs include huge,
broken, encrypted and hostile ones, so reading is bounded three ways: the pages read (MAX_PAGES), what
any one stream may decompress to (pypdf's own limits, lowered here, against decompression bombs), and a
time budget checked between pages (pypdf is pure Python and cannot be interrupted inside a page; the
stream limits bound that page's work). It never raises: a file it cannot read is classified instead.
"""

from __future__ import annotations

import io
import logging
import time
from dataclasses import dataclass, field

from .parse import MAX_TEXT, MAX_TITLE, Extracted, Found
from .sanitize import clean_line
from .urlnorm import UrlError, canonicalize

__all__ = ["PDF_TYPES", "PdfText", "extract_pdf", "is_pdf", "read_pdf"]

log = logging.getLogger(__name__)

PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
MAX_PAGES = 200
MAX_LINKS = 5000
MAX_SECONDS = 10.0
MAX_STREAM_BYTES = 20_000_000  # what one stream may decompress to
ELEMENT = "pdf link"  # the element recorded with a link found in a PDF (a URI action of a link annotation)

# What `PdfText.problem` says when the document could not be read (or only in part).
ENCRYPTED = "pdf_encrypted"  # needs a password we do not have
BROKEN = "pdf_broken"  # not a readable PDF (truncated, damaged, not a PDF at all)
TRUNCATED = "pdf_truncated"  # read in part: more pages than MAX_PAGES, or the time budget ran out


@dataclass
class PdfText:
    title: str = ""
    text: str = ""
    links: list[Found] = field(default_factory=list)
    pages: int = 0  # pages in the document (0 when unknown)
    problem: str = ""  # "", or ENCRYPTED / BROKEN / TRUNCATED


def is_pdf(content_type: str | None) -> bool:
    if not content_type:
        return False
    return content_type.split(";", 1)[0].strip().lower() in PDF_TYPES


def read_pdf(body: bytes, url: str, *, max_seconds: float | None = None, max_pages: int = MAX_PAGES) -> PdfText:
    """What a PDF document says and where it links, within `max_seconds` (MAX_SECONDS, read when called).
    Never raises."""
    out = PdfText()
    max_seconds = MAX_SECONDS if max_seconds is None else max_seconds
    try:
        import pypdf
        from pypdf.errors import FileNotDecryptedError, PdfReadError

        limits = {
            "zlib_maximum_output_length": MAX_STREAM_BYTES,
            "lzw_maximum_output_length": MAX_STREAM_BYTES,
            "run_length_maximum_output_length": MAX_STREAM_BYTES,
            "array_based_stream_maximum_output_length": MAX_STREAM_BYTES,
            "image_maximum_buffer_size": MAX_STREAM_BYTES,
            "stream_decoding_work_maximum_length": 5 * MAX_STREAM_BYTES,
            "jbig2dec_binary": None,  # never run an external decoder on what the web sends
        }
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        out.problem = BROKEN
        return out
    deadline = time.monotonic() + max_seconds
    with pypdf.apply_configuration(**limits):
        try:
            reader = pypdf.PdfReader(io.BytesIO(body), strict=False)
            if reader.is_encrypted and not reader.decrypt(""):  # many PDFs are encrypted with an empty password
                out.problem = ENCRYPTED
                return out
            out.title = _title(reader)
            pages = reader.pages
            out.pages = len(pages)
        except FileNotDecryptedError:
            out.problem = ENCRYPTED
            return out
        except (PdfReadError, Exception) as exc:  # noqa: BLE001 - the web's PDFs break pypdf in every way
            log.info("unreadable PDF %s: %s", url[:200], str(exc)[:200])
            out.problem = BROKEN
            return out
        texts: list[str] = []
        size = 0
        seen: set[str] = set()
        for number in range(min(out.pages, max_pages)):
            if time.monotonic() > deadline or size > MAX_TEXT:
                break
            try:
                page = pages[number]
                _links(page, url, out, seen)
                text = page.extract_text() or ""
            except FileNotDecryptedError:
                out.problem = ENCRYPTED
                return out
            except Exception as exc:  # noqa: BLE001 - one bad page: the others are still read
                log.info("unreadable page %d of PDF %s: %s", number + 1, url[:200], str(exc)[:200])
                continue
            texts.append(text)
            size += len(text)
        else:
            number = min(out.pages, max_pages)
        if number < out.pages and size <= MAX_TEXT:
            out.problem = TRUNCATED
    # Storable text (crawler.sanitize): a PDF's text may hold NULs and lone surrogates (a font's broken map).
    out.text = clean_line(" ".join(" ".join(texts).split()), MAX_TEXT)
    return out


def _title(reader) -> str:
    try:
        meta = reader.metadata
        title = meta.title if meta is not None else None
    except Exception:  # noqa: BLE001 - a damaged info dictionary is no title
        return ""
    return clean_line(" ".join(str(title).split()), MAX_TITLE) if title else ""


def _links(page, url: str, out: PdfText, seen: set[str]) -> None:
    annots = page.get("/Annots")
    if not annots:
        return
    for ref in annots.get_object() if hasattr(annots, "get_object") else annots:
        if len(out.links) >= MAX_LINKS:
            return
        annot = ref.get_object()
        if annot.get("/Subtype") != "/Link":
            continue
        action = annot.get("/A")
        action = action.get_object() if action is not None else None
        uri = action.get("/URI") if action is not None else None
        if not isinstance(uri, (str, bytes)):
            continue
        raw = uri.decode("latin-1") if isinstance(uri, bytes) else str(uri)
        try:
            link = canonicalize(raw, base=url)
        except UrlError:
            continue
        if link in seen:
            continue
        seen.add(link)
        out.links.append(Found(link, ELEMENT))


def extract_pdf(body: bytes, url: str) -> Extracted:
    """A PDF as the extract agent takes a page (crawler.parse.Extracted): its title, text and links; no
    fragment targets (`anchors` None: a link's #page=3 is not checked against the document)."""
    got = read_pdf(body, url)
    return Extracted(title=got.title, links=got.links, base_url=url, anchors=None, text=got.text, problem=got.problem)
