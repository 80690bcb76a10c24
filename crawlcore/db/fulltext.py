"""The pages' full-text index, on each database with its own engine (migration 0022 creates it).

PostgreSQL: a `tsvector` column of the page row (`search_vector`) with a GIN index, built in batches apart
from the extract agent (`index_pending`): the agent's statement stores the page's text in index form in
four columns `ix_title`, `ix_heads`, `ix_anchors`, `ix_body` (a chain's SearchVector, through
`pending_sets`), and a beat job turns the waiting pages' text into their vector a bounded batch at a time
(`page_unindexed_idx`, on the pages whose `ix_body` is set, finds them), clearing the text. The parser, the
stemmer and the GIN entries then cost in one statement per batch, off the crawl's path, and within
SEARCH_INDEX_DELAY of the page's extraction (crawlcore.services.search_index). SQLite: an FTS5 table
`crawladmin_page_fts` whose rowid is the page id, written by the same chain right after the page
(`index_write`): the embedded mode has one writer and no beat, so a batch apart would save nothing there.
Both are given the text in index form (crawler.fulltext: CJK as character bigrams, the body's words once
each) in four fields weighted title > headings and description > anchor text of links to the page > body
text, and both stem English (PostgreSQL's `english` configuration, FTS5's porter tokenizer).

Reads are ORM expressions (`Matches`, `Relevance`), so a selector filters, joins and orders a search with
the rest of its query; `Relevance` is >= 0, higher for a better match (PostgreSQL's ts_rank normalised by
the document's length, FTS5's bm25 negated).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import BooleanField, Expression, F, FloatField

from ._vendor import is_postgres

TABLE = "crawladmin_page"
FTS = "crawladmin_page_fts"
CONFIG = "english"
# The weight of each field, title first: PostgreSQL's weights A, B, C, D (ts_rank's array is D, C, B, A),
# FTS5's bm25 column weights in the table's order (title, heads, anchors, body).
WEIGHTS = (1.0, 0.4, 0.2, 0.1)
FIELDS = ("title", "heads", "anchors", "body")


def vector_sql(source: str) -> str:
    """PostgreSQL: the tsvector of a page from the index-form columns `ix_title`, `ix_heads`, `ix_anchors`,
    `ix_body` of `source` (the page row itself, or a set of rows of those columns): the one place its SQL
    is written."""
    parts = [
        f"setweight(to_tsvector('{CONFIG}'::regconfig, {source}.ix_{name}), '{letter}')"
        for name, letter in zip(FIELDS, "ABCD", strict=True)
    ]
    return " || ".join(parts)


# A page whose text waits for its vector (PostgreSQL): its index-form body is set (never NULL for a page
# indexed, "" at least), and cleared by the batch that builds the vector. page_unindexed_idx is on this.
PENDING = "ix_body IS NOT NULL"


def pending_sets(source: str) -> str:
    """PostgreSQL: the SET items that store a page's index-form text from the columns of the chain input
    `source`, for the batch that builds its vector (`index_pending`)."""
    return ", ".join(f"ix_{name} = {source}.ix_{name}" for name in FIELDS)


def index_pending(*, limit: int) -> int:
    """PostgreSQL: build the vector of at most `limit` pages waiting for it (the oldest first) from their
    stored index-form text, and clear that text; how many pages. SKIP LOCKED: two runs at once take
    different pages, and neither waits for an extract batch that holds a page. SQLite indexes in line: 0."""
    if not is_postgres():
        return 0
    cleared = ", ".join(f"ix_{name} = NULL" for name in FIELDS)
    with connection.cursor() as cur:
        cur.execute(
            f"UPDATE {TABLE} p SET search_vector = {vector_sql('p')}, {cleared} WHERE p.id IN "
            f"(SELECT id FROM {TABLE} WHERE {PENDING} ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)",
            [limit],
        )
        return cur.rowcount


def pending_oldest() -> tuple[int, object] | None:
    """PostgreSQL: `(id, extracted_at)` of the page that has waited longest for its vector, or None when
    none waits (always None on SQLite)."""
    if not is_postgres():
        return None
    with connection.cursor() as cur:
        cur.execute(f"SELECT id, extracted_at FROM {TABLE} WHERE {PENDING} ORDER BY id LIMIT 1")
        row = cur.fetchone()
    return (row[0], row[1]) if row else None


def pending_count(*, at_most: int | None = None) -> int:
    """PostgreSQL: how many pages wait for their vector (counted up to `at_most`); 0 on SQLite."""
    if not is_postgres():
        return 0
    limit = f" LIMIT {int(at_most)}" if at_most is not None else ""
    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM (SELECT 1 FROM {TABLE} WHERE {PENDING}{limit}) AS waiting")
        return cur.fetchone()[0]


def index_write(rows: Sequence[tuple[int, str, str, str, str]]) -> None:
    """Index pages: `(page id, title, heads, anchors, body)`, each field in index form; a page indexed
    before is replaced. On SQLite a page with no text at all gets no row (it matches nothing either way, as
    an empty tsvector does): the index of SEARCH_INDEX off."""
    if not rows:
        return
    with connection.cursor() as cur:
        if is_postgres():
            cur.execute(
                f"UPDATE {TABLE} p SET search_vector = {vector_sql('v')} FROM unnest(%s::bigint[], %s::text[], "
                "%s::text[], %s::text[], %s::text[]) AS v(id, ix_title, ix_heads, ix_anchors, ix_body) "
                "WHERE p.id = v.id",
                [list(column) for column in zip(*rows, strict=True)],
            )
            return
        for i in range(0, len(rows), 200):
            chunk = rows[i : i + 200]
            cur.execute(f"DELETE FROM {FTS} WHERE rowid IN ({', '.join(['%s'] * len(chunk))})", [r[0] for r in chunk])
        texts = [row for row in rows if any(row[1:])]
        cur.executemany(f"INSERT INTO {FTS} (rowid, {', '.join(FIELDS)}) VALUES (%s, %s, %s, %s, %s)", texts)


def index_forget(page_ids: Sequence[int]) -> None:
    """Drop pages from the index (SQLite; on PostgreSQL the vector goes with its row)."""
    if is_postgres() or not page_ids:
        return
    with connection.cursor() as cur:
        for i in range(0, len(page_ids), 500):
            chunk = list(page_ids[i : i + 500])
            cur.execute(f"DELETE FROM {FTS} WHERE rowid IN ({', '.join(['%s'] * len(chunk))})", chunk)


def _fts_query(words: Sequence[str]) -> str:
    """An FTS5 query requiring every word: each a quoted string (its quotes doubled), so nothing in it is
    read as FTS5 syntax."""
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


class _PageExpression(Expression):
    """An expression over the Page rows of the query (its table as the query names it)."""

    def __init__(self, words: Sequence[str]):
        super().__init__()
        self.words = list(words)

    def _page_id(self, compiler, connection_) -> str:
        sql, _ = compiler.compile(F("pk").resolve_expression(compiler.query))
        return sql


class Matches(_PageExpression):
    """True for the pages whose index holds every one of `words` (crawler.fulltext.query_words). No
    words: no page."""

    output_field = BooleanField()
    conditional = True

    def as_sql(self, compiler, connection_, **extra):
        if not self.words:
            return "1 = 0", []
        page_id = self._page_id(compiler, connection_)
        if is_postgres():
            table = page_id.rsplit(".", 1)[0]
            return f"{table}.search_vector @@ plainto_tsquery('{CONFIG}', %s)", [" ".join(self.words)]
        return f"{page_id} IN (SELECT rowid FROM {FTS} WHERE {FTS} MATCH %s)", [_fts_query(self.words)]


class Relevance(_PageExpression):
    """How well a page matches `words`: >= 0, more is better; only meaningful on pages that match."""

    output_field = FloatField()

    def as_sql(self, compiler, connection_, **extra):
        page_id = self._page_id(compiler, connection_)
        if not self.words:
            return "0.0", []
        if is_postgres():
            table = page_id.rsplit(".", 1)[0]
            weights = "{" + ", ".join(str(w) for w in reversed(WEIGHTS)) + "}"
            # Normalisation 1: divided by 1 + the logarithm of the document's length.
            return (
                f"ts_rank('{weights}'::float4[], {table}.search_vector, plainto_tsquery('{CONFIG}', %s), 1)",
                [" ".join(self.words)],
            )
        weights = ", ".join(str(w * 10) for w in WEIGHTS)
        return (
            f"(SELECT -bm25({FTS}, {weights}) FROM {FTS} WHERE {FTS} MATCH %s AND {FTS}.rowid = {page_id})",
            [_fts_query(self.words)],
        )


def inbound_anchors_sql(url_column: str, limit: int = 50) -> str:
    """SQL for the anchor texts of (at most `limit`) links pointing at the URL in `url_column`, space-joined:
    the words other pages use for this one, read with the page for its index (one probe of the links'
    to_url index per page, bounded however many pages link to it)."""
    concat = "string_agg(a.anchor_text, ' ')" if is_postgres() else "group_concat(a.anchor_text, ' ')"
    return (
        f"(SELECT {concat} FROM (SELECT l.anchor_text FROM crawladmin_link l WHERE l.to_url_id = {url_column} "
        f"AND l.anchor_text <> '' LIMIT {int(limit)}) a)"
    )
