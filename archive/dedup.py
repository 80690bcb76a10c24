"""Payloads already archived, by digest: what lets an export write a `revisit` record (identical-payload-digest)
instead of a body archived before, in an earlier export (its CDXJ index) or earlier in this one. No Django.

Memory is one entry per distinct payload of the earlier index's response records (a digest, a URL and a
date: about 200 bytes), so an index of a million responses costs some 200 MB; an export adds the bodies of
the answers it keeps without a page (redirects, 4xx/5xx pages, robots.txt, sitemaps), which repeat the most.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from .cdxj import read_index


class NotAnIndex(ValueError):
    """The earlier export's index can't be read as CDXJ."""


def _stamp(text: str) -> datetime:
    return datetime.strptime(text[:14].ljust(14, "0"), "%Y%m%d%H%M%S").replace(tzinfo=UTC)


class PayloadIndex:
    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, datetime]] = {}
        self.latest: datetime | None = None  # the newest record of the earlier index

    @classmethod
    def from_cdxj(cls, *paths: Path) -> PayloadIndex:
        """The response records of CDXJ indexes: ours, or a pywb collection's (`indexes/index.cdxj`, which
        names no record type: a revisit there is mime `warc/revisit`)."""
        index = cls()
        for path in paths:
            index.read(path)
        return index

    def read(self, path: Path) -> None:
        try:
            for _key, stamp, fields in read_index(path):
                at = _stamp(stamp)
                self.latest = at if self.latest is None or at > self.latest else self.latest
                digest, url = fields.get("digest"), fields.get("url")
                response = fields.get("type", "response") == "response" and fields.get("mime") != "warc/revisit"
                if response and digest and url:
                    self._seen.setdefault(_normal(digest), (url, at))
        except (ValueError, KeyError, UnicodeDecodeError) as exc:
            raise NotAnIndex(f"{path}: not a CDXJ index ({type(exc).__name__}: {exc})") from exc

    def __len__(self) -> int:
        return len(self._seen)

    def earlier(self, digest: str) -> tuple[str, datetime] | None:
        """(URL, date) of the response record that holds this payload, if one was archived."""
        return self._seen.get(_normal(digest))

    def add(self, digest: str, url: str, at: datetime) -> None:
        self._seen.setdefault(_normal(digest), (url, at))


def _normal(digest: str) -> str:
    """`sha1:BASE32` in either case: pywb's indexer writes the digest without its `sha1:` label."""
    label, sep, value = digest.partition(":")
    return f"{label.lower()}:{value.upper()}" if sep else f"sha1:{digest.upper()}"
