"""What a stored answer says: an HTML page parsed (crawler.parse), a PDF read (crawler.pdf), its labels without
control characters. The function the parse's pooled process runs (crawler.child_pool): no Django import, so
that process stays small.
"""

from __future__ import annotations

import zlib

from .parse import Extracted, extract
from .pdf import extract_pdf, is_pdf
from .sanitize import clean_label

__all__ = ["labels_clean", "read_answer", "read_stored"]


def read_stored(body: bytes, url: str, content_type: str) -> Extracted:
    """What a stored body says: an HTML page parsed (crawler.parse), a PDF read (crawler.pdf)."""
    if is_pdf(content_type):
        return extract_pdf(body, url)
    return extract(body, url, content_type=content_type or None)


def labels_clean(ex: Extracted) -> Extracted:
    """The page's title, description and anchor texts without control characters (crawler.sanitize), before
    they are stored: a page's ESC or BEL would otherwise reach every terminal, CSV and report that shows them."""
    ex.title, ex.description = clean_label(ex.title), clean_label(ex.description)
    for link in (*ex.links, *ex.over_limit):
        link.text = clean_label(link.text)
        if link.fragments:
            link.fragments = [(fragment, clean_label(text)) for fragment, text in link.fragments]
    return ex


def read_answer(item: tuple[bytes | None, str, str]) -> Extracted:
    """`(body_z, url, content_type)`: the stored body (zlib, as kept) read, its labels clean. The body is
    inflated here, inside the parse's bounds, not in the worker that sent it."""
    body_z, url, content_type = item
    body = zlib.decompress(body_z) if body_z else b""
    return labels_clean(read_stored(body, url, content_type))
