"""robots.txt is asked once per server even when several visits of it start together (PostgreSQL).

Two slots of one server start at the same moment at the start of a crawl, and both find no rules. Each
used to fetch robots.txt (the throughput benchmark saw 22 robots.txt requests for 20 servers); a
per-server advisory lock now makes the later ones wait for the first one's answer. Real PostgreSQL, one
database connection per thread as in a threads-pool worker, and a robots.txt that takes 0.5 s to answer.
"""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from testweb.cluster import manage, postgres_database

pytestmark = pytest.mark.integration

VISITS = 4

SCRIPT = """
import json, threading
from django.db import connection
from crawlcore.models import Server
from crawlcore.services.visit import ServerVisit
from crawler.lifecycle import Agent
server = Server.objects.create(scheme="http", host="127.0.0.1", port=PORT)
barrier, out = threading.Barrier(VISITS), []
def visit(i):
    try:
        v = ServerVisit.open(server_id=server.id, owner=f"visit-{i}", agent=Agent.LOAD)
        barrier.wait()
        rules = v.robots()
        out.append(rules.allowed("http://127.0.0.1:PORT/private/x", v.user_agent))
        v.close()
    finally:
        connection.close()
threads = [threading.Thread(target=visit, args=(i,)) for i in range(VISITS)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps({"allowed_private": out}))
"""


class _Robots(BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        type(self).requests.append(self.path)
        time.sleep(0.5)
        body = b"User-agent: *\nDisallow: /private/\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_visits_starting_together_fetch_robots_txt_once(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Robots)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with postgres_database() as url:
            env = {
                **os.environ,
                "DATABASE_URL": url,
                "DJANGO_SECRET_KEY": "robots-test-" * 5,
                "CRAWLADMIN_DATA_DIR": str(tmp_path),
                "CRAWL_ALLOW_PRIVATE": "127.0.0.0/8",
                "CRAWL_SERVER_CONCURRENCY": str(VISITS),
                "CRAWL_DEFAULT_DELAY": "0",
            }
            manage(env, "migrate", "--verbosity", "0")
            script = SCRIPT.replace("VISITS", str(VISITS)).replace("PORT", str(port))
            out = json.loads(manage(env, "shell", "-c", script).stdout.strip().splitlines()[-1])
    finally:
        server.shutdown()
        server.server_close()
    # Every visit got the rules (each would refuse /private/), from one request.
    assert out["allowed_private"] == [False] * VISITS
    assert _Robots.requests == ["/robots.txt"]
