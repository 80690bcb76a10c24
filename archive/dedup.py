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
    def from_cdxj(cls, path: Path) -> PayloadIndex:
        """The response records of a CDXJ index (ours, or pywb's of the same WARC files)."""
        index = cls()
        try:
            for _key, stamp, fields in read_index(path):
                at = _stamp(stamp)
                index.latest = at if index.latest is None or at > index.latest else index.latest
                digest = fields.get("digest")
                if fields.get("type", "response") == "response" and digest and fields.get("url"):
                    index._seen.setdefault(_normal(digest), (fields["url"], at))
        except (ValueError, KeyError, UnicodeDecodeError) as exc:
            raise NotAnIndex(f"{path}: not a CDXJ index ({type(exc).__name__}: {exc})") from exc
        return index

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
