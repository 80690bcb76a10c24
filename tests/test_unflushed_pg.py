"""crawlcore.db.transactions.unflushed_commits on PostgreSQL: within the block commits do not wait for the disk
(synchronous_commit off), and after it, also after an error in it, the connection is as it was; the extract
agent writes a batch within it and hands the connection back unchanged. Through `manage.py shell` against a
fresh PostgreSQL database."""

from __future__ import annotations

import json
import os

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

SCRIPT = """
import json, zlib
from django.db import connection
from django.utils import timezone
from crawlcore.db.transactions import unflushed_commits
from crawlcore.models import Link, Page, Url
from crawlcore.services import extract
from crawlcore.services.urls import NewUrl, urls_insert

def setting():
    with connection.cursor() as cur:
        cur.execute("SHOW synchronous_commit")
        return cur.fetchone()[0]

seen = {"before": setting()}
with unflushed_commits():
    seen["within"] = setting()
seen["after"] = setting()
try:
    with unflushed_commits():
        raise KeyError("a failing batch")
except KeyError:
    pass
seen["after an error"] = setting()

urls_insert(urls=[NewUrl("http://a.example/", 0)])
page = Page.objects.create(url=Url.objects.get(), fetched_at=timezone.now(), checksum="c", content_type="text/html",
                           body_z=zlib.compress(b"<a href='/x'>x</a> <a href='/y'>y</a>"))
insert = extract.urls_insert
def watched(**kw):
    seen["extract inserts"] = setting()
    return insert(**kw)
extract.urls_insert = watched
extract.pages_extract(page_ids=[page.id])
seen["after extract"] = setting()
seen["links"] = Link.objects.count()
print(json.dumps(seen))
"""


def test_commits_wait_for_the_disk_again_after_the_block(tmp_path) -> None:
    with postgres_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "t-key-" * 9,
               "CRAWLADMIN_DATA_DIR": str(tmp_path)}  # fmt: skip
        manage(env, "migrate", "--verbosity", "0")
        seen = json.loads(manage(env, "shell", "-c", SCRIPT).stdout.strip().splitlines()[-1])
    assert seen == {
        "before": "on",
        "within": "off",
        "after": "on",
        "after an error": "on",
        "extract inserts": "off",
        "after extract": "on",
        "links": 2,
    }
