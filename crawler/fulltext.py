"""The text of a stored page as the full-text index sees it, and a query as the index reads it (pure; no Django).

Korean and Japanese are written without spaces between the parts of a phrase (Korean joins particles to
words, Japanese has no spaces at all), so a dictionary-free index cannot find "대학" inside "대학교에서" by
whole words. Both the indexed text and the query are turned into overlapping character bigrams: each
run of CJK characters (Hangul, kana, ideographs) becomes its bigrams as separate words, "대학교에서" →
"대학 학교 교에 에서", and a query word becomes its bigrams too, all required. A two-syllable word is one
bigram; a longer one matches where all its bigrams occur. We chose bigrams over trigrams (pg_trgm) because
most Korean words and many Japanese ones are two characters long, which a trigram index cannot find
without a scan, and because the same words serve both databases' own full-text engines (PostgreSQL's
tsvector, SQLite's FTS5), so English and other space-separated languages keep their stemming there. A
run of one CJK character is kept as a word of its own; a one-character query inside a longer run is not
found.

Ranking (`score`): text relevance, normalised to [0, 1), times a boost from the page's stored BlockRank.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["IndexText", "body_index_form", "cjk_bigrams", "index_form", "query_words", "score", "snippet"]

# Hangul Jamo, CJK punctuation excluded; kana; CJK ideographs (extension A, unified, compatibility); Hangul
# compatibility Jamo and syllables; halfwidth katakana.
_CJK = "\u1100-\u11ff\u3041-\u30ff\u3131-\u318e\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(r"\w+")

# What the index keeps of a page: its title, its description and headings, the anchor text of links to it
# (from other pages), and the words of the first MAX_BODY characters of its text: enough for the words a page
# is about, and a bound on the index's size and the extract agent's time.
MAX_TITLE = 512
MAX_HEADS = 4096
MAX_ANCHORS = 4096
MAX_BODY = 65536


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "


def cjk_bigrams(text: str) -> str:
    """`text` with every run of CJK characters replaced by its overlapping bigrams, as separate words; other
    text as it was (the database's own parser splits it and stems it)."""
    if not text or text.isascii():
        return text
    return _CJK_RUN.sub(_bigrams, text)


def index_form(text: str, limit: int) -> str:
    """What the index is given of one field: at most `limit` characters of the text, CJK as bigrams."""
    return cjk_bigrams(text[:limit])


def body_index_form(text: str) -> str:
    """The body for the index: its first MAX_BODY characters in index form, each word (a run of non-space
    characters) once, where it first occurs.

    The database's parser and stemmer take most of the index's cost, in proportion to the text they are
    given, and a body repeats most of its words. A search asks for every word of the query anywhere in the
    page (no phrases), so a word's later occurrences in the body find nothing its first does not. The only
    token of PostgreSQL's parser that can span a space is an HTML tag (`<p class="a b">`, not indexed), and
    with the words reordered `<` could start one that swallows other words: `<` is read as a space, so the
    words once give every lexeme the whole text gives (and the words of tag-like text, as FTS5 does). What
    is lost is for ranking only: how often a body word occurs and how near it stands to the other words of
    the query (title, headings and anchor text keep every occurrence). docs/SEARCH.md says so."""
    return " ".join(dict.fromkeys(index_form(text, MAX_BODY).replace("<", " ").split()))


@dataclass(frozen=True, slots=True)
class IndexText:
    """A page's fields for the index, already in index form (weights: title > heads > anchors > body)."""

    title: str
    heads: str
    anchors: str
    body: str

    @classmethod
    def of(cls, *, title: str, description: str, headings: str, anchors: str, body: str) -> IndexText:
        heads = f"{description} {headings}".strip()
        return cls(
            index_form(title, MAX_TITLE),
            index_form(heads, MAX_HEADS),
            index_form(anchors, MAX_ANCHORS),
            body_index_form(body),
        )

    def as_row(self) -> tuple[str, str, str, str]:
        return (self.title, self.heads, self.anchors, self.body)


def query_words(query: str) -> list[str]:
    """The words a query asks for, in index form (CJK words as their bigrams); every one is required."""
    return _WORD.findall(cjk_bigrams(query[:500]).lower())[:32]


def score(relevance: float, rank: float, pages: int, weight: float) -> float:
    """A hit's score: `relevance / (1 + relevance)` (text relevance, >= 0, brought into [0, 1)) times
    `1 + weight * ln(1 + pages * rank)`, where `rank` is the page's BlockRank (the ranks of a run sum to 1,
    so `pages * rank` is 1 for an average page) and `pages` the number of pages ranked. A page never ranked
    gets the boost 1. The logarithm keeps a home page linked from everywhere from burying every page that
    matches the words better; `weight` 0 orders by text alone. The database computes the same expression
    (search.selectors); this is its reference."""
    boost = 1.0 + weight * math.log1p(max(pages, 0) * max(rank, 0.0))
    return relevance / (1.0 + relevance) * boost


# ---------------------------------------------------------------------------------------------------------
# Snippets: a short passage of the page's text around the first word matched, escaped, the matched words
# marked. Built from the page's text when shown (a page of results), so nothing is stored for it.

SNIPPET_CHARS = 240
_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s")


def _root(word: str) -> str:
    """A crude stem for marking words in a snippet (the index's own stemmer is in the database): the word
    without one common English ending, kept at three letters at least."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _pattern(query: str) -> re.Pattern[str] | None:
    parts = []
    for word in _WORD.findall(query[:500].lower())[:32]:
        if _CJK_RUN.fullmatch(word):
            parts.append(re.escape(word))  # CJK: the word as written, wherever it occurs
        elif any(_CJK_RUN.search(c) for c in word):
            parts.extend(re.escape(run) for run in _CJK_RUN.findall(word))
        else:
            parts.append(r"\b" + re.escape(_root(word)) + r"\w*")
    if not parts:
        return None
    return re.compile("|".join(sorted(set(parts), key=len, reverse=True)), re.IGNORECASE)


def snippet(text: str, query: str, *, chars: int = SNIPPET_CHARS) -> str:
    """HTML: a passage of `text` (plain text) around the first word of `query` found, every such word in
    `<mark>`; everything else escaped. The start of the text when no word is found."""
    pattern = _pattern(query)
    first = pattern.search(text) if pattern else None
    start = 0
    if first is not None:
        start = max(0, first.start() - chars // 3)
        space = text.rfind(" ", 0, start + 1)
        start = space + 1 if space > start - 20 and start else start
    passage = text[start : start + chars]
    out: list[str] = ["…" if start else ""]
    at = 0
    for m in pattern.finditer(passage) if pattern else ():
        out.append(html.escape(passage[at : m.start()]))
        out.append(f"<mark>{html.escape(m.group(0))}</mark>")
        at = m.end()
    out.append(html.escape(passage[at:]))
    if start + chars < len(text):
        out.append("…")
    return "".join(out)


def join_texts(texts: Sequence[str], limit: int) -> str:
    """Texts joined by spaces, at most `limit` characters."""
    return " ".join(t for t in texts if t)[:limit]
