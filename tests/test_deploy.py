"""docker/ without a Docker engine: the compose files name real entry points of the project, with health
checks, named volumes, one beat and an unpublished Redis; and the compose services' exact commands,
started as local processes against PostgreSQL and a private Redis, crawl the test web and report it
through the web app's JSON API."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import yaml

from testweb import SiteSpec, TestWebServer
from testweb.cluster import manage, postgres_database, redis_server
from testweb.ports import free_port

from .crawlcheck import FAST_ENV, ROOT, run_crawl

DOCKER = ROOT / "docker"
IMAGE_ROOT = "/app/"  # WORKDIR of docker/Dockerfile: the project root inside the image
QUEUES = {"load", "extract", "active_scan", "inactive_scan", "housekeeping", "monitor", "render"}
START_SCRIPTS = {"web.sh", "worker.sh", "beat.sh", "flower.sh", "migrate.sh"}
HEALTHCHECK_MODES = {"web", "worker", "beat", "flower"}
SECRETS = ("DJANGO_SECRET_KEY", "CRAWLADMIN_API_TOKEN", "FLOWER_BASIC_AUTH", "POSTGRES_PASSWORD", "REDIS_PASSWORD")


# --- reading the compose files as compose does -------------------------------------------------------


def load_compose(name: str = "compose.yaml") -> dict:
    return yaml.safe_load((DOCKER / name).read_text())


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (compose's env_file format as example.env uses it: no quotes, no inline comments)."""
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"{path.name}: not KEY=VALUE: {line!r}"
            out[key.strip()] = value
    return out


def example_env() -> dict[str, str]:
    return read_env_file(DOCKER / "example.env")


_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's ${X}, ${X:-default}, ${X-default}, ${X:?error}, ${X?error} and $$."""

    def one(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        name, op, arg = m.groups()
        value = variables.get(name)
        missing = value is None or (op is not None and op.startswith(":") and value == "")
        if op in (":?", "?") and missing:
            raise ValueError(f"{name}: {arg}")
        if op in (":-", "-") and missing:
            return arg
        return value or ""

    return _VAR.sub(one, value)


def project_services(compose: dict) -> dict[str, dict]:
    """The services that run the project's image (the others are PostgreSQL and Redis)."""
    return {name: s for name, s in compose["services"].items() if "build" in s}


def service_env(service: dict, variables: dict[str, str]) -> dict[str, str]:
    """What a container of this service sees: its env_file (.env, as example.env) then `environment`."""
    env = dict(variables) if service.get("env_file") else {}
    for key, value in (service.get("environment") or {}).items():
        env[key] = interpolate(str(value), variables)
    return env


def local_path(image_path: str) -> Path:
    assert image_path.startswith(IMAGE_ROOT), f"{image_path} is not in the project ({IMAGE_ROOT})"
    return ROOT / image_path.removeprefix(IMAGE_ROOT)


def script_of(service: dict) -> str:
    return local_path(service["command"][0]).name


def celery_routes_queues() -> set[str]:
    from django.conf import settings

    return {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {settings.CELERY_TASK_DEFAULT_QUEUE}


# --- (a) the files, read ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["compose.yaml", "compose.worker.yaml"])
def test_every_command_is_an_entry_point_of_the_project(name):
    compose = load_compose(name)
    services = project_services(compose)
    assert services
    for svc_name, svc in services.items():
        assert "entrypoint" not in svc, f"{svc_name}: the image's entry point is the start script itself"
        command = svc["command"]
        assert isinstance(command, list) and len(command) == 1, f"{svc_name}: exec form, the start script alone"
        script = local_path(command[0])
        assert script.name in START_SCRIPTS, svc_name
        assert script.is_file() and os.access(script, os.X_OK), f"{script} missing or not executable"
        assert script.read_text().startswith("#!/bin/sh\n"), script
        body = script.read_text()
        # The real command replaces the shell (signals reach it, its exit status is the container's).
        assert re.search(r'^exec "\$PYTHON" ', body, re.M), f"{script.name} does not exec the real command"
        assert svc.get("init") is True, f"{svc_name}: init reaps children and forwards signals"


def test_start_scripts_run_the_celery_app_and_manage_commands_that_exist():
    from django.core.management import get_commands

    from crawladmin.celery import app

    assert app.main == "crawladmin"
    for name in ("worker.sh", "beat.sh", "flower.sh"):
        assert "-m celery -A crawladmin " in (DOCKER / name).read_text(), name
    assert '"$PYTHON" -m gunicorn crawladmin.wsgi:application' in (DOCKER / "web.sh").read_text()
    import crawladmin.wsgi  # noqa: F401  # the WSGI module gunicorn loads

    assert "migrate" in get_commands()
    assert '"$PYTHON" manage.py migrate ' in (DOCKER / "migrate.sh").read_text()
    from flower.command import flower  # noqa: F401  # `celery flower`: requirements-flower.txt


def test_every_routed_queue_has_a_worker_and_every_worker_queue_is_routed():
    variables = example_env()
    compose = load_compose()
    consumed: Counter[str] = Counter()
    for svc in project_services(compose).values():
        if script_of(svc) == "worker.sh":
            env = service_env(svc, variables)
            for queue in env["WORKER_QUEUES"].split(","):
                consumed[queue] += 1
    routed = celery_routes_queues()
    assert routed == QUEUES
    assert set(consumed) == routed, f"unconsumed: {routed - set(consumed)}, unrouted: {set(consumed) - routed}"
    assert all(n == 1 for n in consumed.values()), f"one worker service per queue: {consumed}"


def test_each_queue_has_the_pool_that_suits_it():
    variables = example_env()
    workers = {
        service_env(s, variables)["WORKER_QUEUES"]: service_env(s, variables)
        for s in project_services(load_compose()).values()
        if script_of(s) == "worker.sh"
    }
    for queue in ("load", "active_scan", "inactive_scan", "monitor"):  # I/O: threads, many
        assert workers[queue]["WORKER_POOL"] == "threads", queue
        assert int(workers[queue]["WORKER_CONCURRENCY"]) >= 4, queue
    assert int(workers["load"]["WORKER_CONCURRENCY"]) >= 16
    assert workers["extract"]["WORKER_POOL"] == "prefork"
    assert workers["extract"]["WORKER_CONCURRENCY"] == "", "extract: celery's default, one process per core"
    assert workers["housekeeping"]["WORKER_POOL"] == "prefork"
    names = [env["WORKER_NAME"] for env in workers.values()]
    assert len(set(names)) == len(names), "node names must differ: health checks ping them by name"


@pytest.mark.parametrize("name", ["compose.yaml", "compose.worker.yaml"])
def test_every_long_running_service_has_a_health_check(name):
    for svc_name, svc in load_compose(name)["services"].items():
        check = svc.get("healthcheck")
        assert check, f"{svc_name} has no health check"
        if check.get("disable"):
            assert svc.get("restart") == "no", f"{svc_name}: only a one-shot job may go without a health check"
            continue
        test = check["test"]
        assert test[0] in ("CMD", "CMD-SHELL") and len(test) > 1, svc_name
        for key in ("interval", "timeout", "retries"):
            assert key in check, f"{svc_name}: healthcheck.{key}"
        if test[:2] == ["CMD", "python"]:
            script = local_path(test[2])
            assert script.is_file() and test[3] in HEALTHCHECK_MODES, svc_name


def test_exactly_one_beat_in_the_cluster():
    beats = [n for n, s in project_services(load_compose()).items() if script_of(s) == "beat.sh"]
    assert beats == ["beat"]
    assert "deploy" not in load_compose()["services"]["beat"], "no replicas for beat"
    worker_machine = project_services(load_compose("compose.worker.yaml")).values()
    assert not [s for s in worker_machine if script_of(s) == "beat.sh"], "beat runs on the head only"


def test_redis_and_postgres_are_not_published_and_redis_keeps_an_append_only_file():
    services = load_compose()["services"]
    for name in ("redis", "db"):
        assert "ports" not in services[name], f"{name} must stay inside the compose network"
        assert services[name].get("network_mode") != "host", name
    redis_command = " ".join(services["redis"]["command"])
    assert "--appendonly yes" in redis_command and "--requirepass" in redis_command
    # The opt-in for worker machines publishes them on a private address only, never on all interfaces.
    exposed = yaml.safe_load((DOCKER / "compose.expose.yaml").read_text())["services"]
    for name in ("db", "redis"):
        for port in exposed[name]["ports"]:
            assert port.startswith("${CLUSTER_ADDR:?"), port


def test_published_ports_default_to_loopback():
    variables = example_env()
    for name, svc in load_compose()["services"].items():
        for port in svc.get("ports", []):
            host = interpolate(port, variables).rsplit(":", 1)[0]
            assert host.startswith("127.0.0.1:"), f"{name} publishes {host}"
            assert interpolate(port, {}).startswith("127.0.0.1:"), f"{name}: the default is loopback too"


@pytest.mark.parametrize("name", ["compose.yaml", "compose.worker.yaml"])
def test_data_lives_in_named_volumes(name):
    compose = load_compose(name)
    declared = set(compose.get("volumes") or {})
    for svc_name, svc in compose["services"].items():
        for volume in svc.get("volumes", []):
            source = volume.split(":", 1)[0] if isinstance(volume, str) else volume["source"]
            assert source in declared, f"{svc_name}: {source} is not a named volume (no bind mounts)"
    if name == "compose.yaml":
        assert declared == {"pgdata", "redisdata"}


def test_example_env_lists_every_variable():
    text = (DOCKER / "example.env").read_text()
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=", text, re.M))
    settings_text = "".join((ROOT / "crawladmin" / name).read_text() for name in ("settings.py", "settings_env.py"))
    wanted = set(re.findall(r'(?:env\.\w+|national_tld)\(\s*(?:env,\s*)?"([A-Z][A-Z0-9_]*)"', settings_text))
    for name in ("compose.yaml", "compose.worker.yaml", "compose.expose.yaml"):
        wanted |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", (DOCKER / name).read_text()))
    for script in DOCKER.glob("*.sh"):
        wanted |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*):?[-?=]", script.read_text()))
    wanted -= {"PYTHON", "WORKER_QUEUES", "WORKER_NAME", "WORKER_POOL", "WORKER_CONCURRENCY", "WEB_BIND", "WEB_PORT"}
    assert "DATABASE_URL" in wanted and "CRAWLADMIN_API_TOKEN" in wanted and "REDIS_PASSWORD" in wanted
    assert not wanted - listed, f"missing from docker/example.env: {sorted(wanted - listed)}"


def test_example_env_holds_no_real_secret_and_the_scripts_refuse_its_placeholders(tmp_path):
    variables = example_env()
    for name in SECRETS:
        assert "change-me" in variables[name], name
    assert "change-me" in variables["DATABASE_URL"] and "change-me" in variables["CELERY_BROKER_URL"]
    env = {"PATH": os.environ["PATH"], **variables, "PYTHON": "/bin/false"}
    proc = subprocess.run([str(DOCKER / "migrate.sh")], env=env, capture_output=True, text=True, timeout=10)
    assert proc.returncode == 64 and "placeholder" in proc.stderr


def test_flower_variables_are_flower_options():
    """Flower stops at start on a FLOWER_* variable it does not know."""
    from flower.options import options

    names = {k for k in example_env() if k.startswith("FLOWER_")}
    for svc in project_services(load_compose()).values():
        names |= {k for k in (svc.get("environment") or {}) if k.startswith("FLOWER_")}
    for name in names:
        option = name.removeprefix("FLOWER_").lower()
        assert option in options._options or option.replace("_", "-") in options._options, name


def test_dockerfile_slim_python_non_root_pinned_requirements_static_collected():
    text = (DOCKER / "Dockerfile").read_text()
    froms = re.findall(r"^FROM (\S+)", text, re.M)
    assert froms and all(f.startswith("python:3.11-slim") for f in froms)
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and user[-1].split(":")[0] not in ("root", "0")
    assert "collectstatic --noinput" in text
    assert "-r /tmp/requirements/requirements.txt" in text and "requirements-flower.txt" in text
    ignored = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    assert "docker/.env" in ignored and ".venv" in ignored and "var" in ignored


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-flower.txt", "requirements-dev.txt"])
def test_requirements_are_pinned(name):
    for line in (ROOT / name).read_text().splitlines():
        line = line.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            assert line.startswith("-r ") or re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.]+", line), line
    needed = {"requirements.txt": ("gunicorn==", "whitenoise=="), "requirements-flower.txt": ("flower==",)}
    for package in needed.get(name, ()):
        assert package in (ROOT / name).read_text()


def _docker_compose_available() -> str | None:
    if shutil.which("docker") is None:
        return "no docker client"
    proc = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=20)
    if proc.returncode != 0:
        return "the docker client has no compose plugin: " + (proc.stderr or proc.stdout).strip().splitlines()[0][:120]
    return None


def test_docker_compose_config_validates(tmp_path):
    missing = _docker_compose_available()
    if missing:
        pytest.skip(missing)
    # compose reads docker/.env (interpolation, env_file): use a copy of the directory with example.env as .env.
    copy = tmp_path / "docker"
    shutil.copytree(DOCKER, copy, ignore=shutil.ignore_patterns(".env"))
    (copy / ".env").write_text((DOCKER / "example.env").read_text() + "\nCLUSTER_ADDR=10.0.0.1\n")
    for files in (["compose.yaml"], ["compose.worker.yaml"], ["compose.yaml", "compose.expose.yaml"]):
        args = [a for f in files for a in ("-f", str(copy / f))]
        proc = subprocess.run(["docker", "compose", *args, "config", "-q"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"{files}: {proc.stderr}"


# --- (b) the compose services' exact commands, as local processes ------------------------------------

START_TIMEOUT = 60
API_TOKEN = "deploy-test-token"
FLOWER_AUTH = "ops:deploy-test-password"


def _http(url: str, *, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class Services:
    """The compose services' commands, each a local process in its own process group (stopped by PID)."""

    def __init__(self, logdir: Path):
        self.logdir = logdir
        self.procs: dict[str, tuple[subprocess.Popen, dict[str, str]]] = {}

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.logdir / f"{name}.log", "w")
        proc = subprocess.Popen(
            [str(local_path(c)) if c.startswith(IMAGE_ROOT) else c for c in command],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()
        self.procs[name] = (proc, env)
        return proc

    def log(self, name: str) -> str:
        return (self.logdir / f"{name}.log").read_text(errors="replace")

    def stop(self) -> dict[str, int]:
        """SIGTERM to each service's own process, as `docker stop` sends it to the container's first process
        (warm shutdown: a celery worker finishes its tasks, then stops its pool), then wait; SIGKILL to the
        process group for a straggler, and for anything of a group left behind. (SIGTERM to the whole group
        reached a worker's pool processes in the middle of a task: a WorkerLostError no deployment sees.)"""
        for proc, _ in self.procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
        codes, deadline = {}, time.monotonic() + 30
        for name, (proc, _) in self.procs.items():
            try:
                codes[name] = proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
                codes[name] = -9
        for proc, _ in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group outlived its leader: what it left behind
        return codes


def _healthcheck(service: dict, env: dict[str, str]) -> tuple[int, str]:
    test = service["healthcheck"]["test"]
    assert test[0] == "CMD"
    # The image's `python` is the venv's, as sys.executable is here.
    argv = [sys.executable if a == "python" else str(local_path(a)) if a.startswith(IMAGE_ROOT) else a
            for a in test[1:]]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stderr.strip()


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deploy")
    compose = load_compose()
    services = project_services(compose)
    variables = example_env()
    web_port, flower_port = free_port(), free_port()
    with postgres_database() as db, redis_server(tmp) as broker, TestWebServer(SiteSpec(first_octet=230)) as web:
        # What changes from the compose file: where PostgreSQL, Redis and the two published ports are,
        # real secrets instead of the placeholders, the test web's fast timeouts, and the image's PYTHON.
        overrides = {
            "DATABASE_URL": db,
            "CELERY_BROKER_URL": broker,
            "DJANGO_SECRET_KEY": "deploy-test-only-" * 3,
            "CRAWLADMIN_API_TOKEN": API_TOKEN,
            "FLOWER_BASIC_AUTH": FLOWER_AUTH,
            "CRAWLADMIN_DATA_DIR": str(tmp / "data"),
            "PYTHON": sys.executable,
            "WEB_BIND": "127.0.0.1",
            "WEB_PORT": str(web_port),
            "FLOWER_ADDRESS": "127.0.0.1",
            "FLOWER_PORT": str(flower_port),
            **FAST_ENV,
        }
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}

        def env_of(svc: dict) -> dict[str, str]:
            return {**base, **service_env(svc, variables), **overrides}

        # The image's build step, then the one-shot migrate service, as compose runs them.
        manage({**base, "DJANGO_SECRET_KEY": "collectstatic-only-" * 3, "CRAWLADMIN_DATA_DIR": str(tmp / "build")},
               "collectstatic", "--noinput")
        migrate = subprocess.run([str(local_path(services["migrate"]["command"][0]))], cwd=ROOT,
                                 env=env_of(services["migrate"]), capture_output=True, text=True, timeout=120)
        assert migrate.returncode == 0, migrate.stderr[-3000:]

        running = Services(tmp)
        try:
            long_running = {n: s for n, s in services.items() if s.get("restart") != "no"}
            for name, svc in long_running.items():
                running.start(name, svc["command"], env_of(svc))
            health = _wait_healthy(running, long_running)
            summary = run_crawl({**base, **overrides}, "--dispatch-only", *web.seeds(), timeout=120)
            api = _read_api(web_port, flower_port)
            execs = {name: _cmdline(proc.pid) for name, (proc, _) in running.procs.items()}
        finally:
            codes = running.stop()
        yield {"web": web, "summary": summary, "api": api, "health": health, "codes": codes, "execs": execs,
               "logs": {name: running.log(name) for name in running.procs}}


def _wait_healthy(running: Services, services: dict[str, dict]) -> dict[str, tuple[int, str]]:
    """Each service's compose health check, run with its environment, until all pass (bounded)."""
    deadline = time.monotonic() + START_TIMEOUT
    results: dict[str, tuple[int, str]] = {}
    pending = dict(services)
    while pending and time.monotonic() < deadline:
        for name, svc in list(pending.items()):
            proc, env = running.procs[name]
            assert proc.poll() is None, f"{name} exited with {proc.returncode}:\n{running.log(name)[-3000:]}"
            results[name] = _healthcheck(svc, env)
            if results[name][0] == 0:
                del pending[name]
        if pending:
            time.sleep(1)
    return results


def _read_api(web_port: int, flower_port: int) -> dict:
    base, bearer = f"http://127.0.0.1:{web_port}", {"Authorization": f"Bearer {API_TOKEN}"}
    basic = {"Authorization": "Basic " + base64.b64encode(FLOWER_AUTH.encode()).decode()}
    return {
        "summary": _http(f"{base}/api/summary", headers=bearer),
        "servers": _http(f"{base}/api/servers", headers=bearer),
        "no_auth": _http(f"{base}/api/summary")[0],
        "wrong_token": _http(f"{base}/api/summary", headers={"Authorization": "Bearer nope"})[0],
        "static": _http(f"{base}/static/admin/css/base.css")[0],
        "healthz": _http(f"{base}/healthz"),
        "flower_no_auth": _http(f"http://127.0.0.1:{flower_port}/")[0],
        "flower_auth": _http(f"http://127.0.0.1:{flower_port}/workers", headers=basic)[0],
    }


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@pytest.mark.integration
def test_compose_services_start_healthy(deployed):
    unhealthy = {name: r for name, r in deployed["health"].items() if r[0] != 0}
    assert not unhealthy, unhealthy
    assert set(deployed["health"]) >= {"web", "beat", "flower", "worker-load", "worker-extract"}


@pytest.mark.integration
def test_start_scripts_exec_the_real_command(deployed):
    """The PID compose would signal is celery's or gunicorn's own, not a shell's."""
    for name, argv in deployed["execs"].items():
        assert "-m" in argv and argv[argv.index("-m") + 1] in ("celery", "gunicorn"), (name, argv)


@pytest.mark.integration
def test_the_crawl_reported_by_the_api_matches_the_test_web(deployed):
    web, summary = deployed["web"], deployed["summary"]
    assert summary["stopped"] == "done" and summary["mode"] == "cluster"
    status, body = deployed["api"]["summary"]
    assert status == 200
    api = json.loads(body)
    expected = Counter(web.web.expected().values())
    assert api["states"]["visited"] == expected["visited"]
    assert api["states"]["noresponse1"] == expected["failed"]
    assert api["excluded"] == {"robots.txt": expected["excluded"]}
    assert api["states"] == summary["states"] and api["checks"] == summary["checks"]
    assert api["checks"]["normal"] > 0 and api["due"] == 0 and api["unextracted"] == 0

    status, body = deployed["api"]["servers"]
    assert status == 200
    servers = json.loads(body)
    assert servers["count"] == api["servers"] == len(servers["servers"])
    assert {s["host"] for s in servers["servers"]} >= set(web.web.normal_hosts())


@pytest.mark.integration
def test_the_api_and_flower_want_credentials_and_static_files_are_served(deployed):
    api = deployed["api"]
    assert api["no_auth"] == 401 and api["wrong_token"] == 401
    assert api["healthz"][0] == 200 and json.loads(api["healthz"][1])["status"] == "ok"
    assert api["static"] == 200, "whitenoise serves the collected admin CSS"
    assert api["flower_no_auth"] == 401 and api["flower_auth"] == 200


@pytest.mark.integration
def test_services_stop_cleanly_on_sigterm(deployed):
    codes = deployed["codes"]
    assert codes and all(code == 0 for code in codes.values()), codes
    for name, log in deployed["logs"].items():
        assert "Traceback" not in log, f"{name}:\n{log[-3000:]}"
