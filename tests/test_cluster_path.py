"""Every container that dispatches (beat's jobs on the housekeeping worker, the agents that hand their
server on, the web's operator actions) is told the cluster's load slots: without CRAWL_LOAD_SLOTS a process
falls back to the embedded default (4 robots), and a 32-thread load worker would get about 4 servers at a
time from the dispatch it runs itself."""

from __future__ import annotations

import pytest

from .crawlcheck import ROOT
from .test_deploy import celery_routes_queues, load_compose, project_services, script_of

DISPATCHING = {"worker.sh", "beat.sh", "web.sh"}


@pytest.mark.parametrize("name", ["compose.yaml", "compose.worker.yaml"])
def test_every_dispatching_service_gets_the_clusters_load_slots(name):
    services = {n: s for n, s in project_services(load_compose(name)).items() if script_of_or_worker(s) in DISPATCHING}
    assert services, name
    values = {n: (s.get("environment") or {}).get("CRAWL_LOAD_SLOTS") for n, s in services.items()}
    missing = sorted(n for n, v in values.items() if v is None)
    assert not missing, f"{name}: no CRAWL_LOAD_SLOTS for {missing}"
    assert len(set(values.values())) == 1, values  # one figure for the whole cluster


def script_of_or_worker(service: dict) -> str:
    # compose.worker.yaml's services take their command from the shared x-worker block.
    return script_of(service) if service.get("command") else "worker.sh"


def _readme_cluster_recipe() -> list[str]:
    guide = (ROOT / "docs" / "cluster.md").read_text()
    block = guide.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_guide_cluster_recipe_starts_a_worker_for_every_queue_beat_and_the_web():
    lines = _readme_cluster_recipe()
    started: set[str] = set()
    for line in lines:
        words = line.split()
        if words[:4] == ["celery", "-A", "crawladmin", "worker"]:
            started |= set(words[words.index("-Q") + 1].split(","))
    assert started == celery_routes_queues()
    assert any(line.startswith("celery -A crawladmin beat") for line in lines)
    assert any(line.startswith("gunicorn crawladmin.wsgi") for line in lines)
    assert any(line.startswith("export CRAWL_LOAD_SLOTS=") for line in lines)


def test_the_guide_says_how_to_go_from_the_demo_to_a_cluster():
    guide = (ROOT / "docs" / "getting-started.md").read_text()
    section = guide.split("## From the demo to a cluster\n", 1)[1].split("\n## ", 1)[0]
    for needed in ("export_config", "apply", "createsuperuser", "DJANGO_SECURE", "migrate", "DJANGO_ALLOWED_HOSTS"):
        assert needed in section
