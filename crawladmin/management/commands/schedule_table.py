"""Show the server-order table the dispatcher follows (seed 000), with profiles and pauses.

python manage.py schedule_table [--profiles FILE.csv] [--policy random|sorting|hybrid] [--json] [--rows N]

`--json` prints the table as the contract: an object with the keys "0" … "23", each the ordered list of
server names for that hour (live servers are named by their origin). `--profiles` reads the load profiles
from a CSV with the header `server,hour,load` (one row per server and hour) instead of the live load
history. Equal loads are ordered by server name; a server whose least load occurs in several hours has
the earliest of them as its best hour (scheduling/hybrid_sorting.py).
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from crawlcore.services.schedule import schedule_columns, schedule_table
from scheduling.hybrid_sorting import HOURS, POLICIES, ProfileCsvError, policy_build, profiles_from_csv


def columns_from_csv(path: str, *, policy: str) -> list[list[str]]:
    """The 24 columns of `policy` over the profiles of a `server,hour,load` CSV."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            profiles, listing = profiles_from_csv(f)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except ProfileCsvError as exc:
        raise CommandError(f"{path}: {exc}") from exc
    order = policy_build(policy, profiles, listing, names={s: s for s in listing})
    return [order.order(h, listing) for h in range(HOURS)]


class Command(BaseCommand):
    help = "Print the 24-column server-order table of the active scheduling policy (CRAWL_SCHEDULER)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--profiles", metavar="FILE.csv", help="load profiles from a CSV: server,hour,load")
        parser.add_argument("--policy", choices=POLICIES, help="show another policy's table (default: the active one)")
        parser.add_argument("--json", action="store_true", help='{"0": [server names…], …, "23": […]}')
        parser.add_argument("--rows", type=int, default=20, help="rows of the table to show (default 20)")

    def handle(self, *args, **opts) -> None:
        policy = opts["policy"] or settings.CRAWL_SCHEDULER
        if opts["profiles"] or opts["json"]:
            if opts["profiles"]:
                columns = columns_from_csv(opts["profiles"], policy=policy)
            else:
                columns = schedule_columns(policy=policy)
            if opts["json"]:
                self.stdout.write(json.dumps({str(h): col for h, col in enumerate(columns)}, indent=2))
            else:
                self._columns(policy, columns, rows=opts["rows"])
            return
        self._live(policy, rows=opts["rows"])

    def _columns(self, policy: str, columns: list[list[str]], *, rows: int) -> None:
        self.stdout.write(f"policy {policy}; one line per hour, servers in dispatch order")
        for h, col in enumerate(columns):
            more = f" … {len(col) - rows} more" if len(col) > rows else ""
            self.stdout.write(f"{h:>2}: {' '.join(col[:rows])}{more}")

    def _live(self, policy: str, *, rows: int) -> None:
        table = schedule_table(policy=policy)
        pause = f", pause lookahead {table.pause_lookahead} h" if table.pause_lookahead else ""
        self.stdout.write(f"policy {table.policy}{pause}; now hour {table.hour} (marked *); cells are server ids")
        width = max([len(str(sid)) for sid in table.servers] + [3])
        head = " ".join(f"{h:>{width}}" + ("*" if h == table.hour else " ") for h in range(HOURS))
        self.stdout.write(f"{'row':>4}  {head}")
        depth = max((len(col) for col in table.columns), default=0)
        for r in range(min(rows, depth)):
            cells = " ".join(f"{col[r]:>{width}} " if r < len(col) else " " * (width + 1) for col in table.columns)
            self.stdout.write(f"{r + 1:>4}  {cells}")
        if depth > rows:
            self.stdout.write(f"  ... {depth - rows} more rows (--rows)")
        if table.unprofiled:
            self.stdout.write(f"no load profile yet (sent after the others, by id): {table.unprofiled}")
        self.stdout.write("")
        self.stdout.write(f"{'id':>{width}}  {'best hour':>9}  {'ms now':>8}  paused until  origin")
        for sid, info in table.servers.items():
            profile = info["profile_ms"]
            best = "-" if info["best_hour"] is None else str(info["best_hour"])
            now_ms = "-" if profile is None else f"{profile[table.hour]:.0f}"
            paused = info["paused_until"] or "-"
            self.stdout.write(f"{sid:>{width}}  {best:>9}  {now_ms:>8}  {paused:<12}  {info['origin']}")
