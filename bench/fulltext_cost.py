"""Micro-benchmark: what the pages' full-text index costs PostgreSQL a page, and what each way of making it
cheaper saves. Results: bench/FULLTEXT_COST.md.

    flock -x /work/notes/heavy.lock .venv/bin/python -m bench.fulltext_cost [--pages 1500] [--batch 25]
                                                                            [--rounds 3] [--text both]

The pages: `--text generated`, the throughput benchmark's web (testweb.generated: ~10 KB pages of filler
from a 70-word vocabulary), parsed by crawler.parse as the extract agent does; `--text prose`, English
prose of the same size (the docstrings of Python's standard library, cut into 12,000-character bodies),
whose vocabulary grows as real text's does. Each page's fields go through crawler.fulltext.IndexText as
in a crawl.

In a fresh database (dropped afterwards) a table like the pages' (id, title, a 12 KB bytea standing for
the stored body, search_vector with a GIN index) holds the pages with no vector; each variant then sets
every page's vector with the extract agent's statement shape (one UPDATE … FROM unnest(…) per batch of
`--batch` pages, crawlcore.db.fulltext.vector_sql), and at the end the GIN pending list is flushed in the
same backend (gin_clean_pending_list), so a variant that defers work to the list pays for it. The figure
is the backend's CPU (/proc/<pid>/stat, PostgreSQL on this machine) a page; "none" writes no vector, the
floor the other variants are compared to. Variants run in turns, `--rounds` times, on a fresh table each.
"""

from __future__ import annotations

import argparse
import ast
import sys
import sysconfig
import time
from pathlib import Path

import psycopg2

from bench.harness.db import fresh_database
from bench.harness.proc import cpu_seconds, load_average
from crawler.fulltext import MAX_BODY, IndexText, body_index_form, index_form
from crawler.parse import extract
from testweb.generated import Web, WebSpec

PROSE_CHARS = 12_000


def generated_pages(n: int) -> list[tuple[str, str, str, str]]:
    """(title, heads, anchors, raw body) of the throughput web's first `n` pages, as the parser reads them."""
    web = Web(WebSpec())
    out = []
    for i in range(n):
        s, k = i % web.spec.servers, i // web.spec.servers + 1
        ex = extract(web.render(s, k), web.url(s, k))
        out.append((ex.title, f"{ex.description} {ex.headings}", " ".join(ex.anchors or ()), ex.text))
    return out


def prose_pages(n: int) -> list[tuple[str, str, str, str]]:
    """`n` pages of English prose: the standard library's docstrings, in file order, cut into bodies."""
    texts: list[str] = []
    total = 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    texts.append(" ".join(doc.split()))
                    total += len(texts[-1])
        if total > n * PROSE_CHARS:
            break
    corpus = " ".join(texts)
    out = []
    for i in range(n):
        at = (i * PROSE_CHARS) % max(1, len(corpus) - PROSE_CHARS)
        body = corpus[at : at + PROSE_CHARS]
        words = body.split()
        out.append((" ".join(words[:6]), " ".join(words[6:30]), " ".join(words[30:40]), body))
    return out


def index_rows(pages, *, body) -> list[tuple[str, str, str, str]]:
    rows = []
    for title, heads, anchors, raw in pages:
        ix = IndexText.of(title=title, description="", headings=heads, anchors=anchors, body="")
        rows.append((ix.title, ix.heads, ix.anchors, body(raw)))
    return rows


def _vector(body_expr: str) -> str:
    fields = [("ix_title", "A"), ("ix_heads", "B"), ("ix_anchors", "C")]
    parts = [f"setweight(to_tsvector('english'::regconfig, v.{c}), '{w}')" for c, w in fields]
    return " || ".join([*parts, body_expr])


FULL_BODY = "setweight(to_tsvector('english'::regconfig, v.ix_body), 'D')"
# name: (vector expression, index storage parameters, which body text)
VARIANTS = {
    "none": ("NULL", "", "full"),
    "current": (_vector(FULL_BODY), "", "full"),
    "fastupdate=off": (_vector(FULL_BODY), "WITH (fastupdate = off)", "full"),
    "pending 32MB": (_vector(FULL_BODY), "WITH (gin_pending_list_limit = 32768)", "full"),
    "body strip()": (_vector("strip(to_tsvector('english'::regconfig, v.ix_body))"), "", "full"),
    "body 'simple'": (_vector("setweight(to_tsvector('simple'::regconfig, v.ix_body), 'D')"), "", "full"),
    "body words once": (_vector(FULL_BODY), "", "once"),
    "body first 4096": (_vector(FULL_BODY), "", "4096"),
}


def run_variant(url: str, name: str, rows, batch: int) -> dict:
    expr, storage, _ = VARIANTS[name]
    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS page")
        cur.execute("CREATE TABLE page (id bigint PRIMARY KEY, title text, body_z bytea, search_vector tsvector)")
        cur.execute(f"CREATE INDEX page_search_idx ON page USING gin (search_vector) {storage}")
        cur.execute(
            "INSERT INTO page (id, title, body_z) SELECT g, '', decode(repeat(md5(g::text), 384), 'hex') "
            "FROM generate_series(1, %s) g",
            [len(rows)],
        )
        cur.execute("VACUUM ANALYZE page")
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
        cpu0, wall0 = cpu_seconds(pid), time.perf_counter()
        for at in range(0, len(rows), batch):
            chunk = rows[at : at + batch]
            ids = list(range(at + 1, at + 1 + len(chunk)))
            columns = [ids, *map(list, zip(*chunk, strict=True))]
            cur.execute(
                f"UPDATE page p SET title = v.ix_title, search_vector = {expr} FROM unnest(%s::bigint[], "
                "%s::text[], %s::text[], %s::text[], %s::text[]) AS v(id, ix_title, ix_heads, ix_anchors, ix_body) "
                "WHERE p.id = v.id",
                columns,
            )
        cur.execute("SELECT gin_clean_pending_list('page_search_idx')")
        cpu, wall = cpu_seconds(pid) - cpu0, time.perf_counter() - wall0
        cur.execute("SELECT pg_relation_size('page_search_idx'), pg_total_relation_size('page')")
        gin, total = cur.fetchone()
    conn.close()
    return {"cpu": cpu, "wall": wall, "gin": gin, "total": total}


def bodies(pages, kind: str):
    """The index-form rows with the body whole (as before body_index_form), its words once, or cut short."""
    if kind == "full":
        return index_rows(pages, body=lambda raw: index_form(raw, MAX_BODY))
    if kind == "once":
        return index_rows(pages, body=body_index_form)
    return index_rows(pages, body=lambda raw: index_form(raw, int(kind)))


def python_ms(pages, body) -> float:
    """The extract agent's CPU a page for the body's index form (`body`), in ms."""
    t0 = time.process_time()
    for _title, _heads, _anchors, raw in pages:
        body(raw)
    return (time.process_time() - t0) / len(pages) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--text", choices=("generated", "prose", "both"), default="both")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args(argv)
    if args.pages < 1 or args.batch < 1 or args.rounds < 1:
        ap.error("--pages, --batch and --rounds are at least 1")
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    kinds = ("generated", "prose") if args.text == "both" else (args.text,)
    print(f"before: {load_average()}")
    with fresh_database("fts") as url:
        for kind in kinds:
            pages = generated_pages(args.pages) if kind == "generated" else prose_pages(args.pages)
            sets = {b: bodies(pages, b) for b in {VARIANTS[n][2] for n in names}}
            whole_py = python_ms(pages, lambda raw: index_form(raw, MAX_BODY))
            once_py = python_ms(pages, body_index_form)
            chars = sum(len(r[3]) for r in sets["full"]) / len(pages)
            print(f"\n{kind}: {len(pages)} pages, body {chars:,.0f} characters a page on average; "
                  f"Python CPU, body whole / words once: {whole_py:.3f} / {once_py:.3f} ms a page")  # fmt: skip
            if "once" in sets:
                once = sum(len(r[3]) for r in sets["once"]) / len(pages)
                print(f"  body words once: {once:,.0f} characters a page ({once / chars:.0%})")
            results: dict[str, list[dict]] = {n: [] for n in names}
            for _ in range(args.rounds):
                for n in names:
                    results[n].append(run_variant(url, n, sets[VARIANTS[n][2]], args.batch))
            floor = min(r["cpu"] for r in results.get("none", [{"cpu": 0.0}])) / len(pages) * 1000
            print(f"  {'variant':<20} {'PG CPU ms/page (min, max)':>28} {'over none':>10} {'wall ms/page':>13} "
                  f"{'GIN KiB/page':>13} {'table+idx KiB/page':>19}")  # fmt: skip
            for n in names:
                rs = results[n]
                cpus = [r["cpu"] / len(pages) * 1000 for r in rs]
                wall = min(r["wall"] for r in rs) / len(pages) * 1000
                print(f"  {n:<20} {min(cpus):>10.3f} ({min(cpus):.3f}, {max(cpus):.3f}) {min(cpus) - floor:>10.3f} "
                      f"{wall:>13.3f} {rs[-1]['gin'] / len(pages) / 1024:>13.2f} "
                      f"{rs[-1]['total'] / len(pages) / 1024:>19.2f}")  # fmt: skip
    print(f"\nafter: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
