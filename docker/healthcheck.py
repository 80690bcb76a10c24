"""Health checks of the compose services: `python docker/healthcheck.py web|worker|beat|flower`.

Exit 0 when healthy, 1 (with the reason on stderr) when not. Each reads the same environment as the
service's start script, so it probes what that script started:
- web: GET /healthz on WEB_PORT (the web app is up and its database answers);
- worker: `ping` to the node `<WORKER_NAME or first of WORKER_QUEUES>@<host>` over the broker, so the
  worker is alive and consuming its broker connection;
- beat: `ping` to `beat@<host>`, which beat answers only while its scheduler keeps ticking;
- flower: GET /healthcheck on FLOWER_PORT (Flower's unauthenticated liveness page).
"""

from __future__ import annotations

import os
import socket
import sys
import urllib.request
from pathlib import Path

TIMEOUT = float(os.environ.get("HEALTHCHECK_TIMEOUT", "10"))


def _http_ok(port: str, path: str, host: str = "localhost") -> str | None:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return None if response.status == 200 else f"{path} answered {response.status}"
    except OSError as exc:  # URLError and HTTPError are OSErrors
        return f"{path}: {exc}"


def _allowed_host() -> str:
    """A Host header the web app accepts: the first DJANGO_ALLOWED_HOSTS entry that names a host."""
    for entry in os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost").split(","):
        entry = entry.strip().lstrip(".")
        if entry and entry != "*":
            return entry
    return "localhost"


def _ping(node: str) -> str | None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")
    from crawladmin.celery import app

    try:
        replies = app.control.ping(destination=[node], timeout=TIMEOUT)
    except Exception as exc:  # broker unreachable: unhealthy, whatever kombu raised
        return f"ping {node}: {type(exc).__name__}: {exc}"
    return None if any(node in reply for reply in replies) else f"no answer from {node}"


def check(service: str) -> str | None:
    """None when healthy, else why not."""
    host = socket.gethostname()  # what celery's %h expands to in the start scripts
    if service == "web":
        return _http_ok(os.environ.get("WEB_PORT", "8000"), "/healthz", _allowed_host())
    if service == "flower":
        return _http_ok(os.environ.get("FLOWER_PORT", "5555"), "/healthcheck")
    if service == "worker":
        queues = os.environ.get("WORKER_QUEUES", "")
        name = os.environ.get("WORKER_NAME") or queues.split(",")[0]
        return _ping(f"{name}@{host}") if name else "WORKER_QUEUES is not set"
    if service == "beat":
        return _ping(f"beat@{host}")
    return f"unknown service {service!r}: web, worker, beat or flower"


def main(argv: list[str]) -> int:
    problem = check(argv[1] if len(argv) > 1 else "")
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
