"""WARC files written record by record, each record its own gzip member, rolled over to numbered files
at a size, every record entered in one CDXJ index. No Django."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from warcio.warcwriter import WARCWriter

from .cdxj import IndexSorter, cdxj_line
from .records import RecordMaker


def numbered(out: Path, number: int) -> Path:
    """OUT.warc.gz -> OUT-00001.warc.gz (the part of the name before the first dot keeps its place)."""
    stem, dot, suffix = out.name.partition(".")
    return out.with_name(f"{stem}-{number:05d}{dot}{suffix}")


def index_path(out: Path) -> Path:
    """The CDXJ index beside OUT.warc.gz: OUT.cdxj."""
    return out.with_name(out.name.partition(".")[0] + ".cdxj")


@dataclass
class Written:
    files: list[Path] = field(default_factory=list)
    records: int = 0
    bytes: int = 0


class RollingWarc:
    """Writes groups of records (a page's request, response, revisit, metadata) to OUT, or with `max_size`
    to OUT-00001…, starting a new file before a group once the current one has reached `max_size` bytes
    (compressed), so a page's records stay together. Each file opens with its own warcinfo record."""

    def __init__(self, out: Path, *, max_size: int | None, info: dict[str, str], maker: RecordMaker) -> None:
        self.out = out
        self.max_size = max_size
        self.info = info
        self.maker = maker
        self.index = IndexSorter(index_path(out))
        self.written = Written()
        self._file: BinaryIO | None = None
        self._writer: WARCWriter | None = None
        self._path: Path | None = None

    def _open_next(self) -> None:
        self._close_file()
        number = len(self.written.files) + 1
        path = self.out if self.max_size is None else numbered(self.out, number)
        self._file = path.open("wb")
        self._writer = WARCWriter(self._file, gzip=True, warc_version="1.1")
        self._path = path
        self.written.files.append(path)
        self._write(self.maker.warcinfo(path.name, self.info), indexed=False)

    def _close_file(self) -> None:
        if self._file is not None:
            self.written.bytes += self._file.tell()
            self._file.close()
            self._file = None

    def _write(self, record, *, indexed: bool = True) -> None:
        assert self._file is not None and self._writer is not None and self._path is not None
        offset = self._file.tell()
        self._writer.write_record(record)
        length = self._file.tell() - offset
        self.written.records += 1
        if indexed:
            self.index.add(_index_line(record, filename=self._path.name, offset=offset, length=length))

    def write_group(self, records: Sequence) -> None:
        if self._file is None or (self.max_size is not None and self._file.tell() >= self.max_size):
            self._open_next()
        for record in records:
            self._write(record)

    def close(self) -> Written:
        if self._file is None:
            self._open_next()  # an empty export is still a valid WARC file: its warcinfo
        self._close_file()
        self.index.finish()
        return self.written


def _index_line(record, *, filename: str, offset: int, length: int) -> str:
    h = record.rec_headers
    kind = h.get_header("WARC-Type")
    fields: dict[str, object] = {"type": kind}
    if record.http_headers is not None and kind in ("response", "revisit"):
        mime = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip()
        fields["mime"] = "warc/revisit" if kind == "revisit" else (mime or "unk")
        fields["status"] = record.http_headers.get_statuscode()
    elif kind == "request":
        fields["method"] = record.http_headers.protocol  # warcio's place for a request's method
    digest = h.get_header("WARC-Payload-Digest")
    if digest:
        fields["digest"] = digest
    fields |= {"length": length, "offset": offset, "filename": filename}
    # warcio's own parser takes no fractions of a second, which WARC/1.1 dates carry.
    at = datetime.fromisoformat(h.get_header("WARC-Date").replace("Z", "+00:00"))
    return cdxj_line(url=h.get_header("WARC-Target-URI"), at=at, fields=fields)
