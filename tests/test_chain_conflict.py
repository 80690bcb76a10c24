"""A chain's INSERT that ignores conflicts on one named unique index (crawlcore.db.chain: `conflict` with
`ignore_conflicts`), as the extract batch writes its links: a row whose key (from, to) is known is left out,
on both databases, and the serial primary key is no arbiter (PostgreSQL probes no other index before each row):
a clash on it is an error, never a row silently dropped."""

from __future__ import annotations

import json
import os

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

SCRIPT = """
import json
from django.db import IntegrityError, transaction
from crawlcore.db.chain import Input, Insert, chain
from crawlcore.models import Link
from crawlcore.services.urls import NewUrl, urls_insert

ids = urls_insert(urls=[NewUrl(f"http://a.example/{n}", 0) for n in ("a", "b", "c")]).ids
a, b, c = (ids[f"http://a.example/{n}"] for n in ("a", "b", "c"))
known = Link.objects.create(from_url_id=a, to_url_id=b, anchor_text="old")
columns = (("id", "bigint"), ("from_url_id", "bigint"), ("to_url_id", "bigint"), ("anchor_text", "text"))

def insert(rows):
    write = Insert("linked", Link._meta.db_table, {"id": "id", "from_url_id": "from_url_id", "to_url_id": "to_url_id",
                   "anchor_text": "anchor_text"}, conflict="from_url_id, to_url_id", ignore_conflicts=True,
                   returning=("to_url_id",), source="links")
    return chain({"links": Input(columns, rows)}, [write])["linked"]

out = {"new": insert([(known.id + 10, a, b, "again"), (known.id + 11, a, c, "new")])}
try:
    with transaction.atomic():
        insert([(known.id, b, c, "same id, another key")])
    out["same_id"] = "no error"
except IntegrityError:
    out["same_id"] = "refused"
out["links"] = sorted(list(row) for row in Link.objects.values_list("from_url_id", "to_url_id", "anchor_text"))
out["ids"] = [a, b, c]
print(json.dumps(out))
"""


def _run(env: dict) -> dict:
    manage(env, "migrate", "--verbosity", "0")
    return json.loads(manage(env, "shell", "-c", SCRIPT).stdout.strip().splitlines()[-1])


def test_a_known_link_is_left_out_by_its_key_and_a_clash_on_the_primary_key_is_an_error(tmp_path):
    base = {**os.environ, "DJANGO_SECRET_KEY": "t-key-" * 9}
    base.pop("DATABASE_URL", None)
    lite = _run({**base, "CRAWLADMIN_DATA_DIR": str(tmp_path / "sqlite")})
    with postgres_database() as url:
        pg = _run({**base, "DATABASE_URL": url, "CRAWLADMIN_DATA_DIR": str(tmp_path / "pg")})
    for out in (lite, pg):
        a, b, c = out["ids"]
        assert out["new"] == [[c]]
        assert out["links"] == sorted([[a, b, "old"], [a, c, "new"]])
        assert out["same_id"] == "refused"
