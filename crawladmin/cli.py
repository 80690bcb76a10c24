"""What every `manage.py` command goes through: a user's mistake ends in one line and a non-zero exit, never
a traceback, whichever command made it (those of Django, of this project, and any added later).

- The project's commands (those of this repository's apps) find the schema they need: on the embedded
  SQLite database it is created or upgraded when the command first connects (a fresh data directory needs
  no setup step); on PostgreSQL an outdated schema is refused with the one command to run
  (`crawlcore.schema`). Commands that never touch the database never wait for that check.
- A database that cannot be reached is named in one line: engine, host, port, database and the cause.
- A missing or unreadable file, a file that is not UTF-8 text: one line naming the file when known.
- A closed pipe (`manage.py dead_links | head`): quiet, exit status 141 as a shell reports SIGPIPE.
- Anything else a command lets escape is still one line, with the hint that `--traceback` shows where.

`--traceback` (Django's own option) lets every exception through unchanged, for a developer.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

EXIT_ERROR = 1
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a process ended by SIGPIPE

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")
    from django.core.management import execute_from_command_line

    if argv[1:] == ["help"]:
        # This project's commands with their purpose (Django's plain list of names: `help --commands`).
        import django

        from crawladmin.reference import commands_listing

        django.setup()
        sys.stdout.write(commands_listing() + "\n")
        return
    if "--traceback" in argv:
        _schema_hook_install(argv)
        execute_from_command_line(argv)
        return
    try:
        _schema_hook_install(argv)
        execute_from_command_line(argv)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the point: any escape becomes one line
        sys.stderr.write(error_line(exc) + "\n")
        sys.exit(EXIT_ERROR)
    else:
        _flush_or_quiet()


def _flush_or_quiet() -> None:
    """Flush stdout now, so a reader gone away shows as a broken pipe here and not as Python's
    "Exception ignored" complaint at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()


def _quiet_broken_pipe() -> None:
    # Python flushes stdout again at exit, which would fail once more: point it at /dev/null first.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_BROKEN_PIPE)


# --- one line for each kind of error --------------------------------------------------------------


def error_line(exc: BaseException) -> str:
    """The one line a user sees for an exception a command let escape."""
    from django.core.exceptions import ImproperlyConfigured
    from django.db import DatabaseError

    from crawlcore.schema import SchemaOutdated

    if isinstance(exc, SchemaOutdated):
        return f"error: {exc}"
    if isinstance(exc, DatabaseError):
        return database_error_line(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"error: a file given is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"error: {where}{exc.strerror}"
    if isinstance(exc, ImproperlyConfigured):
        return f"bad setting: {exc}"
    return (
        f"error: {type(exc).__name__}: {_first_line(str(exc)) or 'no message'} "
        "(run the command again with --traceback to see where)"
    )


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def database_error_line(exc: BaseException) -> str:
    """A database error in one line. One raised while connecting names where the database is (engine,
    host, port, database name) and the cause, without the password; a missing table says which command
    creates it; anything else is the driver's first line."""
    from django.db import OperationalError, connections

    conn = connections["default"]
    text = _first_line(str(exc))
    # Never connected and an operational error: it came from connecting. A value refused by a column (a
    # DataError) or a broken constraint is about what was written, wherever the connection stands after it.
    if conn.connection is None and isinstance(exc, OperationalError):
        return f"error: cannot connect to {database_where(conn.settings_dict)}: {connect_cause(str(exc))}"
    lowered = str(exc).lower()
    if "no such table" in lowered or ("relation" in lowered and "does not exist" in lowered):
        return f"error: the database schema is not up to date ({text}): run `python manage.py migrate` first"
    return f"error: database: {text}"


def database_where(db: dict) -> str:
    engine = str(db.get("ENGINE", "")).rsplit(".", 1)[-1]
    if engine == "sqlite3":
        return f"the SQLite database {db.get('NAME')}"
    host = db.get("HOST") or "localhost"
    port = db.get("PORT") or "5432"
    return f"the {engine} database {db.get('NAME')!r} on {host}:{port}"


def connect_cause(message: str) -> str:
    """The driver's reason, without its preamble: libpq says 'connection to server at "h" (addr), port p
    failed: FATAL:  database "x" does not exist', and may add a second attempt's line (IPv6, IPv4)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    causes = []
    for line in lines:
        if "failed:" in line:
            line = line.split("failed:", 1)[1].strip()
        for prefix in ("FATAL:", "ERROR:"):
            if line.startswith(prefix):
                line = line[len(prefix):].strip()
        if line and line not in causes:
            causes.append(line)
    return "; ".join(causes[:2]) or "no reason given"


# --- the schema a project command needs -----------------------------------------------------------


def project_command(name: str) -> bool:
    """Whether `name` is a command of one of this repository's apps (not Django's, not a library's)."""
    from django.apps import apps
    from django.core.management import get_commands

    app_name = get_commands().get(name)
    if app_name is None or app_name == "django.core":
        return False
    try:
        config = next(c for c in apps.get_app_configs() if c.name == app_name)
    except StopIteration:
        return False
    return Path(config.path).resolve().is_relative_to(ROOT) and ".venv" not in Path(config.path).parts


class _SchemaOnConnect:
    """Runs `schema_ensure` when the command first connects to the default database, once a process.

    On first connection, not up front: a command that never touches the database (a simulation, the test
    web) runs without one, and the check costs nothing to those. It runs before the first statement, with
    the connection in autocommit (a transaction opens after the connection does), so the embedded mode
    can migrate there."""

    def __init__(self) -> None:
        self.done = False
        self.busy = False
        self.lock = threading.RLock()

    def __call__(self, sender, connection, **kwargs) -> None:
        if self.done or connection.alias != "default":
            return
        with self.lock:
            if self.done or self.busy:
                return
            self.busy = True
            try:
                from crawlcore.schema import schema_ensure

                schema_ensure()
                self.done = True
            finally:
                self.busy = False


_schema_on_connect = _SchemaOnConnect()


def _schema_hook_install(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1].startswith("-"):
        return
    import django
    from django.conf import settings

    settings.INSTALLED_APPS  # noqa: B018 - loads the settings (a bad value ends here, in one line)
    django.setup()
    if project_command(argv[1]):
        from django.db.backends.signals import connection_created

        connection_created.connect(_schema_on_connect, dispatch_uid="crawladmin.cli.schema")
