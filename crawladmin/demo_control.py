"""What keeps demos apart and lets a user stop one of the demo's servers from another terminal.

- One demo per data directory: `demo` holds an exclusive lock on DATA_DIR/demo.lock while it runs (the
  operating system drops it when the process ends, however it ends), taken before the database is
  touched, so a second demo on the same directory is refused before it could reset the first one's
  password or add servers.
- `manage.py testweb down NAME` / `up NAME` write the hosts to keep down into DATA_DIR/demo-down; the
  running demo reads that file every second and makes those servers stop answering (or answer again).
"""

from __future__ import annotations

import fcntl
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

POLL_SECONDS = 1.0


class DemoBusy(RuntimeError):
    pass


def lock_path(data_dir: Path) -> Path:
    return data_dir / "demo.lock"


def down_path(data_dir: Path) -> Path:
    return data_dir / "demo-down"


@contextmanager
def demo_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's demo lock, or raise DemoBusy naming the demo that holds it."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(lock_path(data_dir), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise DemoBusy(
                f"a demo is already running on {data_dir} ({holder}): open it, or stop it (Ctrl-C) first; "
                "a second demo needs its own CRAWLADMIN_DATA_DIR and --addr"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        down_path(data_dir).unlink(missing_ok=True)  # a new demo starts with every server up
        yield
    finally:
        os.close(fd)  # releases the lock


def port_problem(addr: str) -> str | None:
    """Why the demo could not serve on `addr` (host:port), or None; checked before anything is written."""
    host, _, port_text = addr.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return f"--addr {addr!r}: expected host:port, e.g. 127.0.0.1:8000"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, int(port_text)))
        except OSError as exc:
            return f"--addr {addr}: cannot serve there ({exc.strerror}); choose another, e.g. --addr {host}:8001"
    return None


def host_of(name: str) -> str:
    """A server named as a host (127.0.0.11), host:port, or as the dashboard writes it (http://127.0.0.11:8090)."""
    text = name.strip()
    if "://" in text:
        return (urlsplit(text).hostname or "").lower()
    if text.count(":") == 1:
        text = text.split(":", 1)[0]
    return text.strip("[]").lower()


def hosts_path(data_dir: Path) -> Path:
    return data_dir / "demo-hosts"


def demo_hosts(data_dir: Path) -> list[str]:
    """The running demo's servers (written when it starts serving)."""
    try:
        return [line.strip() for line in hosts_path(data_dir).read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def down_hosts(data_dir: Path) -> set[str]:
    try:
        return {line.strip() for line in down_path(data_dir).read_text().splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def down_set(data_dir: Path, host: str, down: bool) -> set[str]:
    hosts = down_hosts(data_dir)
    (hosts.add if down else hosts.discard)(host)
    tmp = down_path(data_dir).with_suffix(".tmp")
    tmp.write_text("".join(f"{h}\n" for h in sorted(hosts)))
    tmp.replace(down_path(data_dir))  # the demo never reads half a file
    return hosts


def demo_running(data_dir: Path) -> bool:
    """Whether a demo holds this data directory's lock."""
    if not lock_path(data_dir).exists():
        return False
    fd = os.open(lock_path(data_dir), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextmanager
def down_watcher(data_dir: Path, apply: Callable[[str, bool], None], hosts: list[str]) -> Iterator[None]:
    """While inside, make the demo's servers follow DATA_DIR/demo-down (checked every POLL_SECONDS)."""
    stop = threading.Event()
    hosts_path(data_dir).write_text("".join(f"{h}\n" for h in hosts))

    def run() -> None:
        current: set[str] = set()
        while not stop.wait(POLL_SECONDS):
            wanted = down_hosts(data_dir) & set(hosts)
            for host in sorted(wanted ^ current):
                apply(host, host in wanted)
            current = wanted

    thread = threading.Thread(target=run, name="demo-down-watcher", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(POLL_SECONDS * 5)
