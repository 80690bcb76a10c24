"""A CDXJ index of WARC files (the format pywb and the OpenWayback successors read): one line per record,
`<SURT key> <14-digit timestamp> <JSON>`, sorted so a reader can binary-search it. No Django.

Sorting is external (sorted runs of RUN_LINES on disk, merged), so an index of any size is written in
bounded memory.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

RUN_LINES = 50_000
_DEFAULT_PORTS = {"http": 80, "https": 443}
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")


def surt(url: str) -> str:
    """The Sort-friendly URI Reordering Transform as pywb keys it: host labels reversed and comma-separated
    (an IP address as it is, a leading www dropped), a port only when not the default, then ')' and the
    path and query, all lower-cased: http://www.Example.com/A?b=1 -> com,example)/a?b=1."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host or _IPV4.fullmatch(host):
        key = host  # an address is not reversed
    else:
        labels = host.split(".")
        if labels and labels[0] == "www":
            labels = labels[1:]
        key = ",".join(reversed(labels))
    try:
        port = parts.port
    except ValueError:
        port = None
    if port and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        key += f":{port}"
    path = parts.path or "/"
    query = f"?{parts.query}" if parts.query else ""
    return f"{key}){path}{query}".lower()


def cdxj_line(*, url: str, at: datetime, fields: dict) -> str:
    return f"{surt(url)} {at.strftime('%Y%m%d%H%M%S')} {json.dumps({'url': url, **fields}, sort_keys=False)}\n"


class IndexSorter:
    """Collects index lines in any order and writes them sorted: runs of RUN_LINES sorted in memory and
    spilled to temporary files next to the output, then merged."""

    def __init__(self, out: Path, *, run_lines: int = RUN_LINES) -> None:
        self.out = out
        self.run_lines = run_lines
        self.buffer: list[str] = []
        self.runs: list[Path] = []

    def add(self, line: str) -> None:
        self.buffer.append(line)
        if len(self.buffer) >= self.run_lines:
            self._spill()

    def _spill(self) -> None:
        self.buffer.sort()
        fd, name = tempfile.mkstemp(prefix=".cdxj-run-", dir=self.out.parent or ".")
        with os.fdopen(fd, "w", encoding="utf-8") as run:
            run.writelines(self.buffer)
        self.runs.append(Path(name))
        self.buffer = []

    def finish(self) -> int:
        """Write the sorted index; the number of lines."""
        if not self.runs:
            self.buffer.sort()
            with self.out.open("w", encoding="utf-8") as f:
                f.writelines(self.buffer)
            return len(self.buffer)
        if self.buffer:
            self._spill()
        files: list[IO[str]] = [run.open(encoding="utf-8") for run in self.runs]
        count = 0
        try:
            with self.out.open("w", encoding="utf-8") as f:
                for line in heapq.merge(*files):
                    f.write(line)
                    count += 1
        finally:
            for run_file, run in zip(files, self.runs, strict=True):
                run_file.close()
                run.unlink(missing_ok=True)
        return count


def read_index(path: Path) -> Iterator[tuple[str, str, dict]]:
    """(key, timestamp, fields) of each line of a CDXJ file."""
    with path.open(encoding="utf-8") as f:
        for line in f:
            key, stamp, data = line.rstrip("\n").split(" ", 2)
            yield key, stamp, json.loads(data)
