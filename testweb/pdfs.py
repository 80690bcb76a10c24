"""PDF documents for the test webs, written by hand (no PDF library needed to make one): pages of text in a
standard font, link annotations with URI actions, a title; and an encrypted copy (through pypdf)."""

from __future__ import annotations

import io


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[str], *, links: list[str] = (), title: str = "") -> bytes:
    """A PDF with one page per string of `pages` (Latin-1 text in Helvetica), every URL of `links` a link
    annotation on the first page, and `title` in its document information."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below, once the page tree's number is known
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    annots = [
        add(
            f"<< /Type /Annot /Subtype /Link /Rect [72 {700 - 14 * i} 300 {712 - 14 * i}] /Border [0 0 0] "
            f"/A << /S /URI /URI ({_escape(url)}) >> >>".encode("latin-1")
        )
        for i, url in enumerate(links)
    ]
    kids = []
    for n, text in enumerate(pages):
        lines = [text[i : i + 80] for i in range(0, len(text), 80)] or [""]
        ops = ["BT", "/F1 11 Tf", "72 760 Td", "14 TL"] + [f"({_escape(line)}) '" for line in lines] + ["ET"]
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        extra = f" /Annots [{' '.join(f'{a} 0 R' for a in annots)}]" if annots and n == 0 else ""
        kids.append(
            add(
                f"<< /Type /Page /Parent {tree} 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
                f"/Resources << /Font << /F1 {font} 0 R >> >>{extra} >>".encode("latin-1")
            )
        )
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {tree} 0 R >>".encode()
    objects[tree - 1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    info = add(f"<< /Title ({_escape(title)}) >>".encode("latin-1")) if title else None
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    trailer = f"<< /Size {len(objects) + 1} /Root {catalog} 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out.write(b"trailer\n" + trailer.encode() + b"\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def encrypted(pdf: bytes, password: str = "secret") -> bytes:
    """`pdf` encrypted with a user password: unreadable without it."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def costly_pdf(word: str = "budget", *, pages: int = 200, ops: int = 4000, title: str = "") -> bytes:
    """A small PDF that is slow to read: `pages` pages sharing one compressed content stream of `ops`
    operators that draw nothing, then a line showing `word`, so a reader decompresses and interprets the whole
    stream once a page for a few words. What a server can send to make each read of it cost seconds
    (crawler.pdf bounds it at MAX_SECONDS)."""
    import zlib

    body = "q 1 0 0 1 0 0 cm Q " * ops + f"BT /F1 11 Tf 72 760 Td ({word} report) Tj ET"
    stream = zlib.compress(body.encode("latin-1"), 9)
    head = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    first_page = len(objects) + 1
    for _ in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>"
        )
    kids = " ".join(f"{n} 0 R" for n in range(first_page, first_page + pages))
    objects[1] = f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode()
    info = None
    if title:
        objects.append(f"<< /Title ({_escape(title)}) >>".encode("latin-1"))
        info = len(objects)
    out = io.BytesIO()
    out.write(head)
    offsets = []
    for number, obj in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + obj + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out.write(b"trailer\n" + trailer.encode() + b"\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()
