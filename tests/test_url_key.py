"""The URL key (crawler.urlnorm.url_hash) and migration 0026, which rekeys existing rows to it: short, unique,
a server's and a directory's URLs side by side in the index; the migration's own copy of the key function
computes what the live one does; rows are rekeyed forwards and back, on SQLite and on PostgreSQL, through
`manage.py migrate` as a user runs it."""

from __future__ import annotations

import binascii
import hashlib
import importlib
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.urlnorm import URL_KEY_LENGTH, url_hash
from testweb.cluster import manage, postgres_database

migration = importlib.import_module("crawlcore.migrations.0026_url_key_compact")

_label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
_segment = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="/?#"), max_size=12)
_urls = st.builds(
    lambda scheme, host, port, segments, query: f"{scheme}://{host}{port}/{'/'.join(segments)}{query}",
    st.sampled_from(["http", "https"]),
    st.lists(_label, min_size=1, max_size=3).map(".".join),
    st.sampled_from(["", ":8080", ":81"]),
    st.lists(_segment, max_size=4),
    st.sampled_from(["", "?a=1", "?a=1&b=/x", "?"]),
)


def test_the_key_is_short_and_fixed() -> None:
    # Stored in every URL row: this value may change only with a migration that rekeys the rows.
    assert url_hash("http://example.com/") == "4kxh27H+/FpYLDpsaS5AyVX0"
    assert len(url_hash("http://example.com/" + "a" * 2000)) == URL_KEY_LENGTH == 24
    assert url_hash("http://example.com/a") != url_hash("http://example.com/")


def _server_and_directory(url: str) -> tuple[bytes, bytes]:
    raw = binascii.a2b_base64(url_hash(url))
    return raw[:4], raw[:6]


def test_a_server_and_its_directories_sort_together() -> None:
    news = [f"http://example.com/news/{n}" for n in range(50)] + [
        "http://example.com/news/?p=2",
        "http://example.com/news/a/b",
    ]
    top = ["http://example.com/", "http://example.com/a?b/c", "http://example.com/news?p=2"]
    other = "http://example.com/shop/1"
    elsewhere = "http://example.org/news/1"
    heads = {u: _server_and_directory(u) for u in [*news, *top, other, elsewhere]}
    assert len({heads[u] for u in news}) == 1  # one server, one directory: the same first 6 bytes
    assert len({heads[u] for u in top}) == 1  # the server's files outside any directory
    assert len({heads[u][0] for u in [*news, *top, other]}) == 1  # one server: the same first 4 bytes
    assert len({heads[news[0]], heads[top[0]], heads[other]}) == 3  # three directories
    assert heads[elsewhere][0] != heads[news[0]][0]
    assert len({url_hash(u) for u in news}) == len(news)
    # Sorted as the index sorts them, one directory's keys are side by side.
    keys = sorted(url_hash(u) for u in heads)
    rows = [i for i, k in enumerate(keys) if binascii.a2b_base64(k)[:6] == heads[news[0]][1]]
    assert rows == list(range(rows[0], rows[0] + len(news)))


@settings(max_examples=400, deadline=None)
@given(_urls)
def test_the_migration_computes_the_live_key(url: str) -> None:
    assert migration._new_key(url) == url_hash(url)
    assert len(url_hash(url)) == URL_KEY_LENGTH


def test_the_old_key_is_the_url_prefix_and_sha1() -> None:
    url = "http://example.com/" + "a" * 100
    assert migration._old_key(url) == url[:48] + hashlib.sha1(url.encode()).hexdigest()


URLS = [
    "http://a.example/",
    "http://a.example/news/1",
    "https://b.example:8443/x?y=1",
    "http://c.example/\u00e9t\u00e9",
]

SEED = f"""
import binascii
import hashlib
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from crawler.urlnorm import server_key
# The models as they were at the migration the database is at (today's have columns it has not yet).
loader = MigrationLoader(connection)
at = max(k for k in loader.applied_migrations if k[0] == "crawladmin")
state = loader.project_state(at)
Server, Url = state.apps.get_model("crawladmin", "Server"), state.apps.get_model("crawladmin", "Url")
for u in {URLS!r}:
    k = server_key(u)
    s, _ = Server.objects.get_or_create(scheme=k.scheme, host=k.host, port=k.port)
    Url.objects.create(url=u, url_hash=u[:48] + hashlib.sha1(u.encode()).hexdigest(), server=s)
"""

KEYS = """
import json
from crawlcore.models import Url
print(json.dumps(dict(Url.objects.values_list("url", "url_hash"))))
"""


def _migrations_round_trip(env: dict[str, str]) -> None:
    manage(env, "migrate", "crawladmin", "0025", "--verbosity", "0")
    manage(env, "shell", "-c", SEED)
    manage(env, "migrate", "crawladmin", "0026", "--verbosity", "0")
    keys = json.loads(manage(env, "shell", "-c", KEYS).stdout.strip().splitlines()[-1])
    assert keys == {u: url_hash(u) for u in URLS}
    manage(env, "migrate", "crawladmin", "0025", "--verbosity", "0")
    keys = json.loads(manage(env, "shell", "-c", KEYS).stdout.strip().splitlines()[-1])
    assert keys == {u: migration._old_key(u) for u in URLS}
    # Run forwards again over rows half done: each batch takes only the keys still in the other form.
    manage(env, "shell", "-c", f"from crawlcore.models import Url; Url.objects.filter(url={URLS[0]!r}).update("
           f"url_hash={url_hash(URLS[0])!r})")  # fmt: skip
    manage(env, "migrate", "crawladmin", "--verbosity", "0")
    keys = json.loads(manage(env, "shell", "-c", KEYS).stdout.strip().splitlines()[-1])
    assert keys == {u: url_hash(u) for u in URLS}


def _env(tmp_path, database_url: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": database_url, "DJANGO_SECRET_KEY": "t-key-" * 9,
            "CRAWLADMIN_DATA_DIR": str(tmp_path)}  # fmt: skip


def test_migration_rekeys_rows_on_sqlite(tmp_path) -> None:
    _migrations_round_trip(_env(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite3'}"))


@pytest.mark.integration
def test_migration_rekeys_rows_on_postgresql(tmp_path) -> None:
    with postgres_database() as url:
        _migrations_round_trip(_env(tmp_path, url))


COVERED = """
import json
from django.db import connection
from crawlcore.models import Server, Url
from crawlcore.services.urls import NewUrl, url_ids, urls_insert
urls = [f"http://cover.example/p{i}" for i in range(300)]
urls_insert(urls=[NewUrl(u, 0) for u in urls])
again = urls_insert(urls=[NewUrl(u, 1) for u in urls[:10]] + [NewUrl("http://cover.example/new", 1)])
with connection.cursor() as cur:
    cur.execute("VACUUM ANALYZE crawladmin_url")
    cur.execute("SELECT pg_get_indexdef('url_hash_unique'::regclass)")
    index = cur.fetchone()[0]
    cur.execute("SET enable_seqscan = off")
    cur.execute("EXPLAIN SELECT url_hash, id, state, exclusion_reason FROM crawladmin_url WHERE url_hash = ANY(%s)",
                [[Url.objects.get(url=u).url_hash for u in urls[:3]]])
    plan = "\\n".join(r[0] for r in cur.fetchall())
print(json.dumps({"index": index, "plan": plan, "count": Url.objects.count(), "again": again.ids,
                  "ids": url_ids(hashes=list(Url.objects.values_list("url_hash", flat=True)[:5]),
                                 urls=list(Url.objects.values_list("url", flat=True)[:5]))}))
"""

INDEX_DEF = """
from django.db import connection
with connection.cursor() as cur:
    cur.execute("SELECT pg_get_indexdef('url_hash_unique'::regclass)")
    print(cur.fetchone()[0])
"""


@pytest.mark.integration
def test_the_key_index_covers_the_lookup_on_postgresql(tmp_path) -> None:
    # Migration 0027: the known-URL lookup reads the key index alone, and the index still arbitrates inserts.
    with postgres_database() as url:
        env = _env(tmp_path, url)
        manage(env, "migrate", "--verbosity", "0")
        seen = json.loads(manage(env, "shell", "-c", COVERED).stdout.strip().splitlines()[-1])
        assert "UNIQUE" in seen["index"] and seen["index"].endswith("(url_hash) INCLUDE (id, state, exclusion_reason)")
        assert "Index Only Scan using url_hash_unique" in seen["plan"]
        assert seen["count"] == 301  # the ten known ones were not inserted again
        assert len(seen["again"]) == 11
        assert len(seen["ids"]) == 5
        manage(env, "migrate", "crawladmin", "0026", "--verbosity", "0")
        index = manage(env, "shell", "-c", INDEX_DEF)
        assert index.stdout.strip().splitlines()[-1].endswith("USING btree (url_hash)")
