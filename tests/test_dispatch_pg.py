"""The extract agent's dispatch of servers that got new URLs, on real PostgreSQL: a server whose
every slot is held, or that finds no room for another server, is answered by small prepared statements, and
is still dispatched once a slot frees."""

from __future__ import annotations

import json
import os

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

DISPATCH = """
import json
from datetime import timedelta
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from crawlcore.models import Server, ServerLease, Url
from crawlcore.services import load_dispatch
from crawler.urlnorm import url_hash

sent = []
load_dispatch.enqueue_load_on_commit = lambda **kw: sent.append(kw["server_id"])
settings.CRAWL_SERVER_CONCURRENCY, settings.CRAWL_LOAD_SLOTS = 2, 10
servers = [Server.objects.create(scheme="http", host=f"{n}.example", port=80) for n in "ab"]
for s in servers:
    u = f"http://{s.host}/new"
    Url.objects.create(url=u, url_hash=url_hash(u), server=s, state="init",
                       next_check_at=timezone.now() - timedelta(seconds=1))
    for slot in range(2):
        ServerLease.objects.create(server=s, slot=slot, owner=f"w{slot}", agent="load",
                                   expires_at=timezone.now() + timedelta(minutes=5))
ids = [s.id for s in servers]
with CaptureQueriesContext(connection) as held:
    first = load_dispatch.servers_dispatch_with_due_work(server_ids=ids)
ServerLease.objects.filter(server=servers[1], slot=1).update(owner="", expires_at=None)  # a visit ended
settings.CRAWL_LOAD_SLOTS, settings.CRAWL_LOAD_PREFETCH = 1, 0  # two servers busy: no room for another
with CaptureQueriesContext(connection) as full:
    none = load_dispatch.servers_dispatch_with_due_work(server_ids=ids)
settings.CRAWL_LOAD_SLOTS = 10
second = load_dispatch.servers_dispatch_with_due_work(server_ids=ids)
print(json.dumps({
    "first": first,
    "statements": [q["sql"].split()[0] for q in held.captured_queries],
    "sqls": [q["sql"][:150] for q in held.captured_queries],
    "none": none, "full": [q["sql"].split()[0] for q in full.captured_queries],
    "second": second, "sent": sent, "b": servers[1].id,
}))
"""


def test_a_server_with_every_slot_held_or_no_room_costs_prepared_statements_and_is_dispatched_once_one_frees(tmp_path):
    with postgres_database() as url:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "t-key-" * 9,
            "CRAWLADMIN_DATA_DIR": str(tmp_path),
        }
        manage(env, "migrate", "--verbosity", "0")
        out = json.loads(manage(env, "shell", "-c", DISPATCH).stdout.strip().splitlines()[-1])
    assert out["first"] == 0, out["sqls"]
    # The load capacity, then the slots held: prepared statements, no dispatchable query built.
    assert out["statements"] == ["PREPARE", "EXECUTE", "PREPARE", "EXECUTE"], out["sqls"]
    assert out["none"] == 0 and out["full"] == ["EXECUTE"]  # no room: the capacity alone
    assert out["second"] == 1 and out["sent"] == [out["b"]]
