"""Show the server-order table the dispatcher follows (seed 000), with profiles and pauses.

python manage.py schedule_table [--rows N] [--policy random|sorting|hybrid] [--json]
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from crawlcore.services.schedule import schedule_table
from scheduling.hybrid_sorting import HOURS, POLICIES


class Command(BaseCommand):
    help = "Print the 24-column server-order table of the active scheduling policy (CRAWL_SCHEDULER)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--rows", type=int, default=20, help="rows of the table to show (default 20)")
        parser.add_argument("--policy", choices=POLICIES, help="show another policy's table (default: the active one)")
        parser.add_argument("--json", action="store_true", help="the whole table, profiles and pauses as JSON")

    def handle(self, *args, **opts) -> None:
        table = schedule_table(policy=opts["policy"])
        if opts["json"]:
            self.stdout.write(json.dumps(table.as_json(), indent=2))
            return
        pause = f", pause lookahead {table.pause_lookahead} h" if table.pause_lookahead else ""
        self.stdout.write(f"policy {table.policy}{pause}; now hour {table.hour} (marked *); cells are server ids")
        width = max([len(str(sid)) for sid in table.servers] + [3])
        head = " ".join(f"{h:>{width}}" + ("*" if h == table.hour else " ") for h in range(HOURS))
        self.stdout.write(f"{'row':>4}  {head}")
        depth = max((len(col) for col in table.columns), default=0)
        for r in range(min(opts["rows"], depth)):
            cells = " ".join(f"{col[r]:>{width}} " if r < len(col) else " " * (width + 1) for col in table.columns)
            self.stdout.write(f"{r + 1:>4}  {cells}")
        if depth > opts["rows"]:
            self.stdout.write(f"  ... {depth - opts['rows']} more rows (--rows)")
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
