"""The findings that only PostgreSQL shows, on a real one: a heartbeat monitor added (its server's scheme
is 9 characters), a NUL in a job's name, a revisit interval past any column and a search for a port that is
no number answer as mistakes (400 or nothing found), never as a server error; a job whose schedule never
comes does not stop the tick."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from testweb.cluster import ROOT, manage, postgres_database

pytestmark = pytest.mark.integration

SCRIPT = r"""
import json
from urllib.parse import quote
from django.contrib.auth.models import Group, User
from django.test import Client
from crawlcore.models import Job
from crawlcore.services.job_tick import jobs_tick
from dashboard.tokens import api_token_create

user = User.objects.create_user("op")
user.groups.add(Group.objects.get_or_create(name="operator")[0])
token = api_token_create(user=user)[1]
auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
client = Client(raise_request_exception=False, HTTP_HOST="localhost")

def post(body):
    r = client.post("/api/v1/jobs/", data=json.dumps(body), content_type="application/json", **auth)
    return r.status_code

Job.objects.create(name="bad", seeds=["http://a.example/"], schedule="0 0 31 2 *")  # past the checks
out = {
    "nul_post": post({"name": "a\x00b", "seeds": ["http://a.example/"]}),
    "nul_get": client.get("/api/v1/jobs/a%00b/", **auth).status_code,
    "revisit": post({"name": "r", "seeds": ["http://a.example/"], "revisit_after": 10**12}),
    "revisit_weeks": post({"name": "w", "seeds": ["http://a.example/"], "revisit_after": "9999999w"}),
    "cron": post({"name": "c", "seeds": ["http://a.example/"], "schedule": "0 0 31 2 *"}),
    "search": [client.get(f"/api/v1/search/?q=zephyrine&site={quote(s)}", **auth).status_code
               for s in ("x:²", "x:99999999999999999999")],
    "tick": jobs_tick(),
}
print(json.dumps(out))
"""


def test_postgresql_answers_these_mistakes_as_mistakes_and_adds_a_heartbeat(tmp_path):
    with postgres_database() as url:
        env = {**os.environ, "DATABASE_URL": url, "DJANGO_SECRET_KEY": "t-key-" * 9,
               "CRAWLADMIN_DATA_DIR": str(tmp_path)}  # fmt: skip
        manage(env, "migrate", "--verbosity", "0", timeout=300)
        added = subprocess.run([sys.executable, "manage.py", "add_monitor", "heartbeat", "nightly backup"],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert added.returncode == 0, added.stderr
        assert "/ping/" in added.stdout
        out = json.loads(manage(env, "shell", "-c", SCRIPT, timeout=300).stdout.strip().splitlines()[-1])
    assert out["nul_post"] == 400 and out["nul_get"] in (400, 404)
    assert out["revisit"] == out["revisit_weeks"] == out["cron"] == 400
    assert out["search"] == [200, 200]
    assert out["tick"] == {"started": 0, "finished": 0}
