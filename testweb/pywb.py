"""pywb, the web-archive replay tool, run as a user would: a collection made with `wb-manager init`, WARC files
added with `wb-manager add`, served by `wayback` on a loopback port, stopped afterwards.

pywb lives in a venv of its own (`.venv-pywb`, from requirements-pywb.txt): it pins a redis client older than
the one Celery needs. `pywb_venv()` makes it when it is missing or older than the requirements file (under a
lock, so two test runs don't build it at once), within a deadline.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import requests

from testweb.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements-pywb.txt"
INSTALL_DEADLINE = 900.0  # seconds to make the venv (pip from the package index)
START_DEADLINE = 120.0  # seconds for wayback to answer (gevent's start-up on a loaded machine)


class PywbError(RuntimeError):
    pass


def pywb_venv_path() -> Path:
    return Path(os.environ.get("PYWB_VENV", ROOT / ".venv-pywb"))


def pywb_venv(*, deadline: float = INSTALL_DEADLINE) -> Path:
    """The pywb venv, made first when it is missing or older than requirements-pywb.txt."""
    venv = pywb_venv_path()
    marker = venv / ".installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run building it: wait for it, then use what it made
        if marker.exists() and marker.stat().st_mtime >= REQUIREMENTS.stat().st_mtime:
            return venv
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=deadline, capture_output=True)
        left = max(1.0, deadline - (time.monotonic() - started))
        proc = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "-r", str(REQUIREMENTS)],
            timeout=left,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise PywbError(f"pip install -r {REQUIREMENTS.name} failed:\n{proc.stderr[-3000:]}")
        marker.touch()
    return venv


class Pywb:
    """A pywb collection `name` under `root` holding `warcs`, served on 127.0.0.1 while in a `with` block."""

    def __init__(self, root: Path, warcs: list[Path], *, name: str = "crawl") -> None:
        self.root = root
        self.warcs = warcs
        self.name = name
        self.port = 0
        self._proc: subprocess.Popen | None = None
        self._log = root / "wayback.log"

    def _manager(self, *args: str) -> None:
        proc = subprocess.run(
            [str(self.venv / "bin" / "wb-manager"), *args], cwd=self.root, capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0:
            raise PywbError(f"wb-manager {' '.join(args)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")

    def start(self) -> Pywb:
        self.venv = pywb_venv()
        self.root.mkdir(parents=True, exist_ok=True)
        self._manager("init", self.name)
        self._manager("add", self.name, *(str(w) for w in self.warcs))
        self.port = free_port()
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(
                [str(self.venv / "bin" / "wayback"), "-p", str(self.port), "-b", "127.0.0.1", "-t", "4"],
                cwd=self.root,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise PywbError(f"wayback exited with {self._proc.returncode}:\n{self.log()}")
            try:
                requests.get(f"http://127.0.0.1:{self.port}/", timeout=5)
                return self
            except requests.RequestException:
                time.sleep(0.3)
        self.stop()
        raise PywbError(f"wayback did not answer within {START_DEADLINE:.0f} s:\n{self.log()}")

    def log(self) -> str:
        return self._log.read_text(errors="replace")[-3000:] if self._log.exists() else ""

    def replay_url(self, url: str, *, modifier: str = "id_", timestamp: str = "") -> str:
        """The replay address of `url`: `id_` asks for the archived bytes as they are (no rewriting)."""
        return f"http://127.0.0.1:{self.port}/{self.name}/{timestamp}{modifier}/{url}"

    def get(self, url: str, *, follow: bool = True, timestamp: str = "", timeout: float = 60.0) -> requests.Response:
        return requests.get(self.replay_url(url, timestamp=timestamp), allow_redirects=follow, timeout=timeout)

    def get_rewritten(self, url: str, *, timeout: float = 60.0) -> requests.Response:
        """`url` replayed as a browser sees it (`mp_`: links and redirects rewritten into the replay), redirects
        followed."""
        return requests.get(self.replay_url(url, modifier="mp_"), allow_redirects=True, timeout=timeout)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=15)
        self._proc = None

    def __enter__(self) -> Pywb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
