"""Ranking on real PostgreSQL: the binary COPY read, the temp-table upsert, the advisory lock — through
`manage.py rank` in a subprocess against a fresh database."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import networkx as nx
import pytest

from testweb.cluster import manage, postgres_database

from .crawlcheck import ROOT

pytestmark = pytest.mark.integration

# Builds a small crawl through the ORM (so model defaults fill every column): 4 servers, 60 URLs of
# which the last 20 were never fetched (dangling), 250 random links, one server group.
MAKE_CRAWL = """
import random
from crawlcore.models import Link, Server, Url
from crawler.urlnorm import url_hash
rnd = random.Random(5)
hosts = ["www.uni.ac.kr", "cs.uni.ac.kr", "shop.example.com", "10.1.2.3"]
servers = [
    Server.objects.create(scheme="http", host=h, port=80, group="g" if h.startswith("shop") else "") for h in hosts
]
names = [f"http://{s.host}/p{i}" for i in range(15) for s in servers]
Url.objects.bulk_create(
    [Url(url=n, url_hash=url_hash(n), server=servers[k % 4]) for k, n in enumerate(names)]
)
ids = [Url.objects.get(url=n).id for n in names]
pairs = {(rnd.choice(ids[:40]), rnd.choice(ids)) for _ in range(250)}
Link.objects.bulk_create([Link(from_url_id=a, to_url_id=b) for a, b in pairs])
"""


def test_postgres_rank_stores_ranks_equal_to_networkx_and_runs_once_at_a_time(tmp_path):
    import psycopg2

    with postgres_database() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "ranking-test-" * 4,
            "CRAWLADMIN_DATA_DIR": str(tmp_path),
            "RANK_TOLERANCE": "1e-12",
        }
        manage(env, "migrate", "--verbosity", "0")
        manage(env, "shell", "-c", MAKE_CRAWL)
        first = json.loads(manage(env, "rank", "--json", "--compare", "--block", "domain").stdout)
        assert (first["pages"], first["blocks"], first["converged"]) == (60, 3, True)
        second = json.loads(manage(env, "rank", "--json").stdout)  # the update path of the upsert

        with psycopg2.connect(url) as conn, conn.cursor() as cur:
            cur.execute("SELECT from_url_id, to_url_id FROM crawladmin_link")
            graph = nx.DiGraph(cur.fetchall())
            cur.execute("SELECT id FROM crawladmin_url")
            graph.add_nodes_from(r[0] for r in cur.fetchall())
            cur.execute("SELECT url_id, rank, domain, computed_at FROM ranking_pagerank")
            rows = cur.fetchall()
            cur.execute("SELECT count(*) FROM ranking_rankrun")
            runs = cur.fetchone()[0]
        expected = nx.pagerank(graph, tol=1e-15, max_iter=10_000)
        assert {r[0] for r in rows} == set(expected) and runs == 2
        assert max(abs(rank - expected[url_id]) for url_id, rank, *_ in rows) < 1e-9
        assert {r[2] for r in rows} == {"uni.ac.kr", "example.com", "10.1.2.3"}
        assert len({r[3] for r in rows}) == 1 and second["iterations"]["global"] >= 1

        # A run already in progress (we hold its lock): a second one refuses at once.
        holder = psycopg2.connect(url)
        try:
            with holder.cursor() as cur:
                cur.execute("SELECT pg_advisory_lock(%s)", [0x72616E6B])
            proc = subprocess.run(
                [sys.executable, "manage.py", "rank"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
            )
            assert proc.returncode != 0 and "another ranking run is in progress" in proc.stderr
        finally:
            holder.close()
